"""Tests of the whole product: docs, layers, examples, wiring, install."""
