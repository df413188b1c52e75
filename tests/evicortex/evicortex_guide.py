"""Reading the Python snippets out of the evicortex API guide, a plain-text file.

The guide has no code fences: a snippet is a run of lines that starts with a line
beginning ``from evicortex``, ``with EviCortex``, ``memory.``, ``EviCortex.open(`` or
``ClaimInput(`` and goes on while the following lines are code. A statement is taken
whole (open brackets, and the indented body of a ``with`` header); after it, blank lines
and one more statement are taken when that statement is code: it parses as Python (an
import, ``with``, assignment, ``assert`` or call, never a bare name such as a heading) or
it is a signature ``name(parameters) -> type``. Prose such as ``close() is idempotent.``
is neither, so it ends the snippet.

A snippet that parses as Python is runnable; the others are lists of signatures, one
statement each, parsed by turning ``name(parameters)`` into ``def _(parameters): ...``.

Used by tests/evicortex/test_guide_snippets.py and by
tests/providers/test_evicortex_snippet.py (which loads this file by path).
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "GUIDE",
    "NO_DEFAULT",
    "Parameter",
    "Signature",
    "Snippets",
    "implementation_parameters",
    "read_snippets",
]

# A verbatim copy of the evicortex 0.3 API guide, the document this face implements.
GUIDE = Path(__file__).resolve().parent / "data" / "evicortex-0.3-api-guide.txt"

_START = re.compile(
    r"^(from evicortex\b|with EviCortex\b|memory\.\w|EviCortex\.open\(|ClaimInput\()"
)
_SIGNATURE = re.compile(
    r"^(?P<name>[A-Za-z_][\w.]*)\((?P<params>.*)\)\s*(?:->\s*(?P<returns>\S.*?))?\s*$",
    re.DOTALL,
)
_CODE_STATEMENTS = (ast.Import, ast.ImportFrom, ast.With, ast.Assign, ast.Assert)


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


NO_DEFAULT = _NoDefault()
"""The default of a parameter that has none."""


@dataclass(frozen=True)
class Parameter:
    """One parameter: its name, its kind (``inspect.Parameter`` kind name) and its
    default (``NO_DEFAULT`` when it has none). Parameters compare by ``key``, in which
    the default is its ``repr`` so that ``1`` and ``1.0``, or ``()`` and ``[]``, differ."""

    name: str
    kind: str
    default: object

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.kind, repr(self.default))


@dataclass(frozen=True)
class Signature:
    """A documented signature: ``name`` as written (``memory.recall``), its parameters
    in order and its return annotation as written (``None`` when not given)."""

    name: str
    parameters: tuple[Parameter, ...]
    returns: str | None


@dataclass(frozen=True)
class Snippets:
    """Every snippet of the guide: runnable code, and the documented signatures."""

    runnable: tuple[str, ...]
    signatures: tuple[Signature, ...]


def _depth(line: str, depth: int) -> int:
    """The bracket depth after ``line``, brackets inside string literals ignored."""
    quote = ""
    escaped = False
    for char in line:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
    return depth


def _span(lines: list[str], start: int) -> int:
    """The end (exclusive) of the statement that starts at ``lines[start]``: its open
    brackets closed, plus the indented body of a compound header."""
    end, depth = start, 0
    while end < len(lines):
        depth = _depth(lines[end], depth)
        end += 1
        if depth <= 0:
            break
    if lines[end - 1].rstrip().endswith(":"):
        while end < len(lines):
            if lines[end][:1].isspace() and lines[end].strip():
                end += 1
                continue
            following = end
            while following < len(lines) and not lines[following].strip():
                following += 1
            if following < len(lines) and following > end and lines[following][:1].isspace():
                end = following
                continue
            break
    return end


def _is_code(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return _signature(text) is not None
    statements = tree.body
    if not statements:
        return False
    return all(
        isinstance(s, _CODE_STATEMENTS)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call))
        for s in statements
    )


def _statement(lines: list[str], start: int) -> int | None:
    """The end of the code statement starting at ``lines[start]``, or ``None`` when the
    line does not start one."""
    line = lines[start]
    if not line.strip() or line[:1].isspace():
        return None
    end = _span(lines, start)
    return end if _is_code("\n".join(lines[start:end])) else None


def _blocks(text: str) -> list[list[str]]:
    lines = text.splitlines()
    blocks: list[list[str]] = []
    index = 0
    while index < len(lines):
        end = _statement(lines, index) if _START.match(lines[index]) else None
        if end is None:
            index += 1
            continue
        statements = [lines[index:end]]
        while True:
            following = end
            while following < len(lines) and not lines[following].strip():
                following += 1
            if following >= len(lines):
                break
            next_end = _statement(lines, following)
            if next_end is None:
                break
            statements.append(lines[end:following] + lines[following:next_end])
            end = next_end
        blocks.append([line for statement in statements for line in statement])
        index = end
    return blocks


def _literal(node: ast.expr | None) -> object:
    return NO_DEFAULT if node is None else ast.literal_eval(node)


def _signature(text: str) -> Signature | None:
    match = _SIGNATURE.match(text.strip())
    if match is None:
        return None
    try:
        tree = ast.parse(f"def _signature({match['params']}): ...")
    except SyntaxError:
        return None
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    arguments = function.args
    if arguments.vararg is not None or arguments.kwarg is not None:
        return None
    positional = [*arguments.posonlyargs, *arguments.args]
    padded: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    padded += arguments.defaults
    kinds = ["POSITIONAL_ONLY"] * len(arguments.posonlyargs)
    kinds += ["POSITIONAL_OR_KEYWORD"] * len(arguments.args)
    parameters = [
        Parameter(arg.arg, kind, _literal(default))
        for arg, kind, default in zip(positional, kinds, padded, strict=True)
    ]
    parameters += [
        Parameter(arg.arg, "KEYWORD_ONLY", _literal(default))
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    ]
    returns = match["returns"]
    return Signature(match["name"], tuple(parameters), None if returns is None else returns.strip())


def read_snippets(path: Path = GUIDE) -> Snippets:
    """Every runnable snippet and every documented signature of the guide, in order."""
    runnable: list[str] = []
    signatures: list[Signature] = []
    for block in _blocks(path.read_text(encoding="utf-8")):
        code = "\n".join(block)
        try:
            ast.parse(code)
        except SyntaxError:
            pass
        else:
            runnable.append(code + "\n")
            continue
        index = 0
        while index < len(block):
            if not block[index].strip():
                index += 1
                continue
            end = _span(block, index)
            signature = _signature("\n".join(block[index:end]))
            if signature is None:
                raise AssertionError(f"neither code nor signature: {block[index]!r}")
            signatures.append(signature)
            index = end
    return Snippets(tuple(runnable), tuple(signatures))


def implementation_parameters(target: object, *, drop_self: bool) -> tuple[Parameter, ...]:
    """The parameters of a callable of the implementation, in the form of the guide's."""
    parameters = list(inspect.signature(target).parameters.values())  # type: ignore[arg-type]
    if drop_self and parameters and parameters[0].name == "self":
        parameters = parameters[1:]
    return tuple(
        Parameter(
            p.name,
            p.kind.name,
            NO_DEFAULT if p.default is inspect.Parameter.empty else p.default,
        )
        for p in parameters
    )
