"""Tests of plugin_sdk.plugin: hookspecs, the manager, third-party plugins."""
