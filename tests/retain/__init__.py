"""Tests of plugin_sdk.retain: the Retain Job, its properties, Compiled Truth."""
