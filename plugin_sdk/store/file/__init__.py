"""The store file as a whole: a consistent copy of it, and its connection tuned for a long run."""
