"""Vector search: embeddings from the host, stored beside the memories, queried by the current model."""
