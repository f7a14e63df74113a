"""Talking to the host's model: prompts built from the store, the tagged-reply parser, the llm adapter."""
