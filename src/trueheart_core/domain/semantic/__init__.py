"""Semantic projection: the embedder and reranker seams, vectors and fusion (pure)."""

from trueheart_core.semantic.embedders import Embedder, HashingEmbedder
from trueheart_core.semantic.rerank import RerankCandidate, Reranker, RerankResult

__all__ = ["Embedder", "HashingEmbedder", "RerankCandidate", "RerankResult", "Reranker"]
