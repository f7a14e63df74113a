"""Tests of plugin_sdk.cli: each command end to end."""
