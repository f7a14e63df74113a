"""The test suite: one folder per area of plugin_sdk, product-wide tests in project/."""
