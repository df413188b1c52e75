"""Relevance search: pure tokenisation, ranking and capsule packing, plus their DTOs."""
