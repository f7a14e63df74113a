"""Tests of plugin_sdk.vectors: hybrid retrieval."""
