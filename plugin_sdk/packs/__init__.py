"""Packs: category sets as data, where they come from, and installing them into a store."""
