"""Tests of plugin_sdk.packs: pack documents, installs, entry points, upgrades."""
