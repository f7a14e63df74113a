"""The stages a host runs each session: historian, classify, dreamer, inject."""
