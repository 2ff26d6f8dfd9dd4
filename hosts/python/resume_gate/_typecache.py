"""Component types read once, not on every call.

PyPI ``wasmtime`` (39 to 51) looks a component function's type up through the C API on every
call, and every record's fields and every variant's cases on every value it converts: for the
gate's ``on-emit`` that was about 95 % of a ~170 µs call. A component's types never change, so
remembering each read on the type object that made it changes no result; this module does so
for the reads the conversions use, once per process (it patches ``wasmtime.component``'s type
classes, for every user in the process).
"""

from __future__ import annotations

from typing import Any

from wasmtime.component import Func
from wasmtime.component import _types as t

_MARK = "_resume_gate_cached"


def _cache_property(cls: type, name: str) -> None:
    prop = cls.__dict__.get(name)
    if not isinstance(prop, property) or getattr(prop.fget, _MARK, False):
        return
    read = prop.fget
    slot = f"_rg_{name}"

    def cached(self: Any) -> Any:
        try:
            return self.__dict__[slot]
        except KeyError:
            value = self.__dict__[slot] = read(self)
            return value

    setattr(cached, _MARK, True)
    setattr(cls, name, property(cached, doc=prop.__doc__))


def _cache_method(cls: type, name: str) -> None:
    method = cls.__dict__.get(name)
    if method is None or getattr(method, _MARK, False):
        return
    slot = f"_rg_{name}"

    def cached(self: Any, *args: Any) -> Any:
        try:
            return self.__dict__[slot]
        except KeyError:
            value = self.__dict__[slot] = method(self, *args)
            return value

    setattr(cached, _MARK, True)
    setattr(cls, name, cached)


def install() -> None:
    """Idempotent. A ``Func`` belongs to one store, so its type is cached per ``Func``."""
    _cache_method(Func, "type")
    _cache_method(t.VariantLikeType, "_tagged")
    for cls, names in [
        (t.FuncType, ["params", "result"]),
        (t.ListType, ["element"]),
        (t.RecordType, ["fields"]),
        (t.TupleType, ["elements"]),
        (t.VariantType, ["cases"]),
        (t.EnumType, ["names"]),
        (t.OptionType, ["payload"]),
        (t.ResultType, ["ok", "err"]),
        (t.FlagsType, ["names"]),
    ]:
        for name in names:
            _cache_property(cls, name)
