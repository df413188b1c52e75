"""``python -m trueheart_core.cli``: the ``trueheart`` command."""

from trueheart_core.cli import main

raise SystemExit(main())
