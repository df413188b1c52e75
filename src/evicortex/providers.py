"""Optional model providers of the evicortex face (the ``local-transformers`` extra).

Importing ``evicortex`` never imports this module, torch or transformers; importing this
module does not import the frameworks either: constructing an embedder does.
"""

from trueheart_core.providers import TransformersEmbedder, local_transformers_artifact_sha256

__all__ = ["TransformersEmbedder", "local_transformers_artifact_sha256"]
