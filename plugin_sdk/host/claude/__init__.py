"""Claude Code as a host: its settings, its hook events (queued, served or answered in-process), the drain.

``claude_hooks.py`` writes the settings and answers the events; ``hook_entry.py``
is the hook in-process, ``hook_client.py`` the standard-library client that asks
``hook_server.py`` first; ``hook_queue.py`` and ``hook_drain.py`` keep and read
what SessionEnd and PreCompact left; ``claude_setup.py`` is install's store,
pack and self-check, and ``claude-code status``.
"""
