"""What every SQL adapter's one error-translation point shares: the exceptions that mean
a malformed row, and how a driver exception is emptied of anything it may quote."""

from __future__ import annotations

from trueheart_core.ports import Operation

MALFORMED = (UnicodeError, TypeError, ValueError, ArithmeticError, LookupError, RecursionError)
"""What a driver raises, or code reading a malformed row raises, besides the driver's
own errors: invalid UTF-8 in a server's messages, values of the wrong type, JSON nested
too deep to decode."""


REENTRANT = "is already in a call on this thread (a callback may not call back into the store)"
"""The ``ValidationError`` rule of a unit of work opened inside another on one thread."""


def forget(error: BaseException) -> None:
    """Strip what an exception may quote of a body: arguments, traceback and chain (and
    the text a Unicode error carries), so that keeping it as a context holds no body."""
    error.args = ()
    error.__traceback__ = None
    error.__context__ = None
    error.__cause__ = None
    if isinstance(error, UnicodeDecodeError):
        error.object, error.start, error.end = b"", 0, 0
    elif isinstance(error, UnicodeEncodeError | UnicodeTranslateError):
        error.object, error.start, error.end = "", 0, 0


DIAGNOSTICS: dict[Operation, str] = {
    "open": "schema initialization failed",
    "ingest": "event ingest failed",
    "materialize": "memory materialization failed",
    "recall": "memory recall failed",
    "govern": "governance transaction failed",
    "expire": "raw content expiry failed",
    "audit": "audit read failed",
    "verify": "integrity check failed",
    "search": "memory search failed",
    "read": "memory read failed",
    "index": "search index rebuild failed",
    "project": "semantic projection failed",
    "erase": "subject erasure failed",
    "stats": "statistics read failed",
    "rebuild": "index rebuild failed",
    "compact": "store compaction failed",
    "export": "store export failed",
    "import": "store import failed",
}
"""The fixed diagnostic of each operation, carried by the errors its driver failures
become."""
