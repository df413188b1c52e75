"""Optional model providers, each behind an extra.

``import trueheart_core`` never imports this package, and importing it imports no model
framework: :class:`TransformersEmbedder` imports ``torch`` and ``transformers`` (the
``local-transformers`` extra) only when it is constructed.
"""

from trueheart_core.providers.artifact import local_transformers_artifact_sha256
from trueheart_core.providers.transformers import TransformersEmbedder

__all__ = ["TransformersEmbedder", "local_transformers_artifact_sha256"]
