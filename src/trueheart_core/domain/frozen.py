"""Building frozen, slotted dataclasses with less work than their own ``__init__``.

A frozen dataclass's generated ``__init__`` sets every field through
``object.__setattr__``, looked up afresh for each field on every call. Every write
builds about ten such objects (the rows it stores, the records it returns), so that
lookup is a measurable part of its CPU. The functions here set the fields through the
class's slot descriptors instead, which needs no look-up per field
(``benchmarks/compare_writes.py`` measures what it does to the writes); what the object
is (its fields, equality, hash, ``repr``, immutability) does not change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

_C = TypeVar("_C", bound=type)


def _setters(cls: type, *, plain: bool) -> dict[str, Any]:
    """The ``__set__`` of each field's slot descriptor, named ``_set_<field>``. ``plain``:
    refuse a field ``__init__`` would not take as it is (``default_factory``, or
    ``init=False``)."""
    found: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        setter = getattr(getattr(cls, f.name, None), "__set__", None)
        if setter is None or (
            plain and (f.default_factory is not dataclasses.MISSING or not f.init)
        ):
            raise TypeError(f"{cls.__name__}.{f.name}: not a plain slotted field")
        found[f"_set_{f.name}"] = setter
    return found


def direct_init(cls: _C) -> _C:
    """Class decorator, above ``@dataclass(frozen=True, slots=True)``: replace the
    generated ``__init__`` by one with the same parameters (and defaults) that sets the
    slots directly. For classes without ``__post_init__`` whose fields are all plain
    (no ``default_factory``, no ``init=False``)."""
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} validates in __post_init__")
    names = [f.name for f in dataclasses.fields(cls)]
    namespace = _setters(cls, plain=True)
    parameters = []
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING:
            parameters.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            parameters.append(f"{f.name}=_default_{f.name}")
    body = "".join(f"    _set_{name}(self, {name})\n" for name in names) or "    pass\n"
    exec(f"def __init__(self, {', '.join(parameters)}):\n{body}", namespace)
    init = namespace["__init__"]
    generated = cls.__init__  # type: ignore[misc]
    init.__module__ = cls.__module__
    init.__qualname__ = generated.__qualname__
    init.__annotations__ = dict(generated.__annotations__)
    init.__doc__ = generated.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls


def assembler(cls: type) -> Callable[..., Any]:
    """A function that makes an instance of ``cls`` from its field values in order,
    without calling ``__init__`` (so without ``__post_init__``)."""
    names = [f.name for f in dataclasses.fields(cls)]
    namespace = _setters(cls, plain=False)
    namespace["_new"] = object.__new__
    namespace["_cls"] = cls
    body = "".join(f"    _set_{name}(built, {name})\n" for name in names)
    exec(
        f"def assemble({', '.join(names)}):\n    built = _new(_cls)\n{body}    return built\n",
        namespace,
    )
    assemble: Callable[..., Any] = namespace["assemble"]
    return assemble
