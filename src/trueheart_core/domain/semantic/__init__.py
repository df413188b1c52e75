"""Semantic projection: the embedder and reranker seams, vectors and fusion (pure)."""

from trueheart_core.domain.semantic.embedders import Embedder, HashingEmbedder
from trueheart_core.domain.semantic.rerank import RerankCandidate, Reranker, RerankResult

__all__ = ["Embedder", "HashingEmbedder", "RerankCandidate", "RerankResult", "Reranker"]
