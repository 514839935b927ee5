"""Hypothesis strategies that build a valid value for any ``Message`` at any version.

The strategies are derived from the declarative :class:`~protocol.schema.Field`
definitions, so they follow the schema exactly: a field outside the version is
set to the value the decoder fills in (its default), a field is ``None`` only in
versions where it is nullable, tagged fields may hold their default (and are then
omitted on the wire), and numbers stay within their wire type's range.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from protocol.api import APIS
from protocol.primitives import ZERO_UUID, Obj
from protocol.schema import Field, Message, in_range
from protocol.schemas import misc, share_records

MAX_ITEMS = 3
MAX_TEXT = 12
MAX_BYTES = 24

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

_chars = st.characters(exclude_categories=("Cs",))
# the long alternatives push compact length prefixes past one varint byte
_text = st.one_of(st.text(_chars, max_size=MAX_TEXT), st.text(_chars, min_size=128, max_size=140))
_binary = st.one_of(st.binary(max_size=MAX_BYTES), st.binary(min_size=127, max_size=200))
_uuids = st.one_of(st.just(ZERO_UUID), st.uuids())


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from((lo, hi, 0, -1 if lo < 0 else 1)), st.integers(lo, hi))


def _scalar(elem: str) -> st.SearchStrategy[Any]:
    if elem in _INT_RANGES:
        return _ints(*_INT_RANGES[elem])
    if elem == "bool":
        return st.booleans()
    if elem == "float64":
        return st.floats(allow_nan=False)
    if elem == "string":
        return _text
    if elem in ("bytes", "records"):
        return _binary
    if elem == "uuid":
        return _uuids
    raise ValueError(f"no strategy for field type {elem!r}")


def field_strategy(f: Field, version: int) -> st.SearchStrategy[Any]:
    """A value for field ``f`` at ``version`` (the field is present in that version)."""
    nullable = in_range(f.nullable, version)
    if f.element == "struct":
        element: st.SearchStrategy[Any] = struct_strategy(f.fields, version)
    else:
        element = _scalar(f.element)
    if f.is_array:
        value: st.SearchStrategy[Any] = st.lists(element, max_size=MAX_ITEMS)
    else:
        value = element
    if nullable or (f.type == "records"):
        value = st.one_of(st.none(), value)
    return value


def struct_strategy(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[Obj]:
    """A complete :class:`Obj` for ``fields`` at ``version``, absent fields at their defaults."""
    present = {f.name: field_strategy(f, version) for f in fields if in_range(f.versions, version)}

    def build(values: dict[str, Any]) -> Obj:
        return Obj({f.name: values[f.name] if f.name in values else f.default_for(version) for f in fields})

    return st.fixed_dictionaries(present).map(build)


def message_strategy(message: Message, version: int) -> st.SearchStrategy[Obj]:
    return struct_strategy(message.fields, version)


def misc_messages() -> list[Message]:
    """The standalone messages: headers, the consumer protocol, the coordinators' records."""
    return [v for module in (misc, share_records) for v in vars(module).values() if isinstance(v, Message)]


def all_message_versions() -> Iterator[tuple[str, Message, int]]:
    """``(test id, message, version)`` for every request/response version in APIS and every misc message."""
    for key, api in sorted(APIS.items()):
        for message in (api.request, api.response):
            for version in range(message.min_version, message.max_version + 1):
                yield f"{key}-{message.name}-v{version}", message, version
    for message in misc_messages():
        for version in range(message.min_version, message.max_version + 1):
            yield f"misc-{message.name}-v{version}", message, version
