"""Tests of plugin_sdk.model: adapters, prompts, the boundary, tagged replies."""
