"""Component types read once, not on every call, for the gate's own functions only.

PyPI ``wasmtime`` (39 to 51) looks a component function's type up through the C API on every
call, and every record's fields and every variant's cases on every value it converts: for the
gate's ``on-emit`` that was about 95 % of a ~170 µs call. A component's types never change, so
remembering each read on the type object that made it changes no result.

Nothing of ``wasmtime`` is patched: the gate's ``Func`` objects, and each type object read
through them, are moved to a subclass that remembers its reads (``adopt``). Every other user
of ``wasmtime`` in the process keeps its classes as they are.
"""

from __future__ import annotations

from typing import Any

from wasmtime.component import Func
from wasmtime.component import _types as t

#: The reads the conversions make, by type class.
_READS: dict[type, tuple[str, ...]] = {
    t.FuncType: ("params", "result"),
    t.ListType: ("element",),
    t.RecordType: ("fields",),
    t.TupleType: ("elements",),
    t.VariantType: ("cases",),
    t.EnumType: ("names",),
    t.OptionType: ("payload",),
    t.ResultType: ("ok", "err"),
    t.FlagsType: ("names",),
}

#: Each type class and its remembering subclass (``None``: nothing to remember).
_SUBCLASSES: dict[type, type | None] = {}


def _remembering_property(name: str, read: property) -> property:
    slot = f"_rg_{name}"

    def remembered(self: Any) -> Any:
        try:
            return self.__dict__[slot]
        except KeyError:
            value = self.__dict__[slot] = _adopt(read.fget(self))
            return value

    return property(remembered, doc=read.__doc__)


def _remembering_tagged(tagged: Any) -> Any:
    def remembered(self: Any) -> bool:
        try:
            return self.__dict__["_rg__tagged"]
        except KeyError:
            value = self.__dict__["_rg__tagged"] = tagged(self)
            return value

    return remembered


def _subclass(cls: type) -> type | None:
    if cls in _SUBCLASSES:
        return _SUBCLASSES[cls]
    namespace: dict[str, Any] = {"__slots__": ()}
    for name in _READS.get(cls, ()):
        namespace[name] = _remembering_property(name, getattr(cls, name))
    if issubclass(cls, t.VariantLikeType):
        namespace["_tagged"] = _remembering_tagged(cls._tagged)
    sub = type(f"Remembering{cls.__name__}", (cls,), namespace) if len(namespace) > 1 else None
    _SUBCLASSES[cls] = sub
    if sub is not None:
        _SUBCLASSES[sub] = sub
    return sub


def _adopt(value: Any) -> Any:
    """Moves a type object, and those inside a list or tuple of them, to its subclass."""
    if isinstance(value, (list, tuple)):
        for item in value:
            _adopt(item)
    elif isinstance(value, (t.ValType, t.FuncType)):
        sub = _subclass(type(value))
        if sub is not None:
            value.__class__ = sub
    return value


class _RememberingFunc(Func):
    """A gate function: its type is read once (a ``Func`` belongs to one store)."""

    __slots__ = ()

    def type(self, store: Any) -> t.FuncType:
        try:
            return self.__dict__["_rg_type"]
        except KeyError:
            value = self.__dict__["_rg_type"] = _adopt(Func.type(self, store))
            return value


def adopt(func: Func) -> Func:
    """Makes ``func`` (one of the gate's) remember its type and the types inside it."""
    func.__class__ = _RememberingFunc
    return func
