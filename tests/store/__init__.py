"""Tests of plugin_sdk.store: opening, the tables' owners, search, forget, writes."""
