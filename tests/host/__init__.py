"""Tests of plugin_sdk.host: the async store, MCP, the hook server, projects, browsing."""
