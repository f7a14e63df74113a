"""Tests of plugin_sdk.composites: groups, fragments, titles, the table of contents."""
