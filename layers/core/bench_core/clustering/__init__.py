"""Failure insights: embeddings, k-means with k from the data, one-line descriptions, and the
ClusterWorkflow steps."""
