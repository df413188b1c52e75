"""``python -m trueheart_core.cli``: the ``trueheart`` command."""

import sys

try:
    from trueheart_core.cli import command
except KeyboardInterrupt:  # Ctrl-C while the package is still being imported
    sys.stderr.write("trueheart: interrupted\n")
    raise SystemExit(130) from None

raise SystemExit(command())
