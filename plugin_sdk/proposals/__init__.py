"""The approval queue: proposals, the diffs they carry, approving, applying and undoing them."""
