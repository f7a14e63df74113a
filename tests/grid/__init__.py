"""Tests of plugin_sdk.grid: cells, entities, strength, consolidation."""
