"""memsdk's built-in stage plugins (installed as ``plugin_sdk_plugins``).

Each module here is a small set of ``@hookimpl`` functions registered through
the ``plugin_sdk`` entry-point group, exactly as a third-party plugin would be.
The stage hook specifications arrive with the stages issue.
"""
