"""Tests of plugin_sdk.proposals: the approval queue, git, forges."""
