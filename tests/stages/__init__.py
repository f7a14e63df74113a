"""Tests of plugin_sdk.stages: classify, the historian, inject, recall, the dreamer."""
