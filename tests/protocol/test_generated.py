"""The generated modules cannot go stale: ``protocol/schemas/`` (the codecs' schemas) and
``protocol/messages/`` (their typed shapes) are exactly what ``protocol/_schema_gen.py`` makes from
Kafka's specs, and every typed shape has the fields of the schema it describes."""

from __future__ import annotations

import importlib
import types
import typing
from pathlib import Path

import pytest

from protocol import _schema_gen
from protocol.api import APIS
from protocol.schema import Field, Message
from protocol.schemas import misc, share_records

PROTOCOL_DIR = Path(_schema_gen.__file__).resolve().parent
SPEC_SETS = (Path("shared/reference/kafka-message-specs/trunk-2025-02-14"),
             Path("shared/reference/kafka-message-specs/kafka-4.2"))


def spec_dirs() -> list[Path]:
    """The spec sets the modules are generated from: ``shared/`` beside the checkout (or above it).
    They are reference material, not part of the repository: a checkout without them skips."""
    for parent in PROTOCOL_DIR.parents:
        if all((parent / s).is_dir() for s in SPEC_SETS):
            return [parent / s for s in SPEC_SETS]
    pytest.skip(f"Kafka's message specs ({', '.join(map(str, SPEC_SETS))}) are not beside the checkout")


def test_committed_modules_are_what_the_generator_makes() -> None:
    dirs = spec_dirs()
    files = _schema_gen.render(*dirs)
    stale = [rel for rel, text in files.items()
             if not (PROTOCOL_DIR / rel).is_file() or (PROTOCOL_DIR / rel).read_text() != text]
    assert not stale, (f"stale generated modules {stale}: run python -m protocol._schema_gen "
                       f"{' '.join(map(str, dirs))}")
    for folder in ("schemas", "messages"):
        on_disk = {f"{folder}/{p.name}" for p in (PROTOCOL_DIR / folder).glob("*.py") if p.name != "__init__.py"}
        assert on_disk == {rel for rel in files if rel.startswith(folder + "/")}, "modules nobody generates"


def _shape_of(hint: object) -> type | None:
    """The TypedDict inside ``hint`` (``X``, ``list[X]``, ``X | None``), if any."""
    if typing.is_typeddict(hint):
        return hint  # type: ignore[return-value]
    for arg in typing.get_args(hint):
        found = _shape_of(arg)
        if found is not None:
            return found
    return None


def _assert_same_fields(shape: type, fields: tuple[Field, ...], where: str) -> None:
    hints = typing.get_type_hints(shape)
    assert list(hints) == [f.name for f in fields], where
    assert not shape.__required_keys__, f"{where}: every key may be left out"
    for f in fields:
        inner = _shape_of(hints[f.name])
        assert (inner is not None) == (f.element == "struct"), f"{where}.{f.name}"
        if inner is not None:
            assert (typing.get_origin(hints[f.name]) is list
                    or any(typing.get_origin(a) is list for a in typing.get_args(hints[f.name]))) == f.is_array
            _assert_same_fields(inner, f.fields, f"{where}.{f.name}")
        if f.nullable is not None:
            assert type(None) in typing.get_args(hints[f.name]), f"{where}.{f.name} is nullable"


def _messages(module: types.ModuleType) -> list[Message]:
    return [v for v in vars(module).values() if isinstance(v, Message)]


@pytest.mark.parametrize("api", sorted(APIS.values(), key=lambda a: a.key), ids=lambda a: a.name)
def test_typed_shapes_have_the_schema_fields(api: typing.Any) -> None:
    typed = importlib.import_module(f"protocol.messages.{_schema_gen.snake(api.name)}")
    for message in (api.request, api.response):
        _assert_same_fields(getattr(typed, f"{message.name}Data"), message.fields, message.name)


@pytest.mark.parametrize("schemas", [misc, share_records], ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_typed_shapes_of_headers_and_records(schemas: types.ModuleType) -> None:
    typed = importlib.import_module(f"protocol.messages.{schemas.__name__.rsplit('.', 1)[-1]}")
    for message in _messages(schemas):
        _assert_same_fields(getattr(typed, f"{message.name}Data"), message.fields, message.name)
