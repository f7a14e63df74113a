"""The store's bulk write path: ``Memories.write_many`` in one statement per table per batch."""
