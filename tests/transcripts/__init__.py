"""Tests of plugin_sdk.transcripts: importers and chunking."""
