"""Integrations with agent frameworks, each behind an extra.

``import trueheart_core`` never imports this package. Each subpackage imports its
framework when it is imported, and works over the public API of
:class:`trueheart_core.TrueHeart` only.
"""
