"""Composites: headers, sequences, themes and reference sets built over memories."""
