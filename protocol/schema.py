"""Declarative message definitions and the per-version codecs built from them.

A :class:`Message` lists its :class:`Field` s once, each with the versions it
exists in, the versions it is nullable in and, for tagged fields, its tag.
``Message.struct(v)`` builds the ``construct`` struct for version ``v`` (a
:class:`KStruct` of our primitives); ``Message.compiled(v)`` is the same struct
compiled by ``construct`` into straight-line Python.  Both are cached.

``encode``/``decode`` use the compiled form.  Decoding fills fields absent in
the version with their defaults, so callers can read any field of any version.

Encoding takes a dict (or an :class:`Obj`): a missing key is sent as the field's default,
and a key for a field the version lacks is left out, so one dict serves every version.
A key that no version has a field for (a misspelling, a stale name) would be dropped just as
silently; *strict encoding* (:func:`set_strict`, on for the whole test suite, off in
production where it costs nothing) refuses it instead with :class:`UnknownFieldError`,
naming the message, the key and the closest known field.  What strict encoding accepts:

* every key that names a field of the message or struct in *some* version.  A field of another
  version is dropped, as always, even when its value is not the default.  Kafka's serializers
  refuse a non-default value for a field the version lacks unless the spec marks the field
  ignorable, but they serialize data built for one known version; ours are built once for
  every version (``FindCoordinator`` sends ``key`` below v4 and ``coordinator_keys`` from v4,
  one dict carrying both), and a decoded :class:`Obj` holds every field of every version.
  Refusing those would turn each version-agnostic builder into a branch per version without
  catching a wrong name;
* nested structs are checked at every depth, in every element of an array: every struct the
  encoder walks at that version, and no other (what a version does not carry is never looked at,
  by the encoder or by the check).
"""

from __future__ import annotations

import difflib
import os
import struct
import uuid
from collections.abc import Mapping
from functools import cache
from io import BytesIO
from typing import Any

from construct import Construct
from construct.core import CodeGen

from protocol import primitives as p
from protocol.errors import ProtocolError, UnknownFieldError
from protocol.primitives import ZERO_UUID, KConstruct, Obj, Writer

VersionRange = tuple[int, int | None] | None

_FIXED = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "uint32": "I",
          "float64": "d", "bool": "?"}
_ZERO = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
         "bool": False, "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID}

MISSING: Any = object()

#: ``KB_STRICT_MESSAGES=1`` turns strict encoding on at import (the tests set it, so the
#: brokers they start as processes are strict too); ``KB_STRICT_MESSAGES_LOG`` names a file
#: each refusal is also appended to, one line each, so a refusal inside a broker is seen by the
#: test that caused it even when the broker turned it into a closed connection.  (Not ``KBROKER_*``:
#: those are the broker's settings, and a test broker starts without them.)
STRICT_ENV = "KB_STRICT_MESSAGES"
STRICT_LOG_ENV = "KB_STRICT_MESSAGES_LOG"
_strict = os.environ.get(STRICT_ENV, "") not in ("", "0")
_messages: list[Message] = []


def set_strict(on: bool) -> None:
    """Turn strict encoding on or off for this process (codecs already built are rebuilt)."""
    global _strict
    _strict = on
    for message in _messages:
        message._parsers.clear()
        message._builders.clear()


def strict() -> bool:
    """True when the encoder refuses keys its messages have no field for."""
    return _strict


def in_range(rng: VersionRange, version: int) -> bool:
    return rng is not None and rng[0] <= version and (rng[1] is None or version <= rng[1])


class Field:
    """One field of a message or sub-struct, across all of its versions."""

    __slots__ = ("default", "fields", "flexible", "name", "nullable", "tag", "tagged", "type", "versions")

    def __init__(self, name: str, type: str, versions: VersionRange, *, nullable: VersionRange = None,
                 default: Any = MISSING, tag: int | None = None, tagged: VersionRange = None,
                 flexible: bool = True, fields: tuple[Field, ...] = ()) -> None:
        self.name = name
        self.type = type
        self.versions = versions
        self.nullable = nullable
        self.default = default
        self.tag = tag
        self.tagged = tagged
        self.flexible = flexible
        self.fields = fields

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    def default_for(self, version: int) -> Any:
        """The value this field takes when absent (a fresh object for mutable types)."""
        if self.default is not MISSING:
            return self.default
        if self.is_array:
            return []
        if self.type == "struct":
            return None if in_range(self.nullable, version) else default_struct(self.fields, version)
        return _ZERO[self.type]


def default_struct(fields: tuple[Field, ...], version: int) -> Obj:
    return Obj({f.name: f.default_for(version) for f in fields})


class _Slot:
    """A field resolved for one version: its construct and how to treat absence."""

    __slots__ = ("con", "default", "field", "mutable_default")

    def __init__(self, field: Field, con: KConstruct | None, version: int) -> None:
        self.field = field
        self.con = con
        self.default = field.default_for(version)
        self.mutable_default = isinstance(self.default, list | dict)


class KStruct(KConstruct):
    """A Kafka struct at one version: regular fields, then (if flexible) a tagged-field section."""

    def __init__(self, fields: tuple[Field, ...], version: int, flexible: bool) -> None:
        super().__init__()
        self.version = version
        self.flexible = flexible
        self.regular: list[_Slot] = []
        self.tagged: list[_Slot] = []
        self.absent: list[_Slot] = []
        for f in fields:
            if not in_range(f.versions, version):
                self.absent.append(_Slot(f, None, version))
            elif flexible and f.tag is not None and in_range(f.tagged, version):
                self.tagged.append(_Slot(f, field_construct(f, version, flexible), version))
            else:
                self.regular.append(_Slot(f, field_construct(f, version, flexible), version))
        self.tagged.sort(key=lambda s: s.field.tag)
        self.min_size = sum(s.con.min_size for s in self.regular if s.con) + (1 if flexible else 0)
        self.all_fields = fields

    # -- reference (uncompiled) path ------------------------------------------------

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        result = Obj()
        for slot in self.regular:
            result[slot.field.name] = slot.con._parsereport(stream, context, path)
        for slot in self.tagged + self.absent:
            result[slot.field.name] = slot.field.default_for(self.version)
        if self.flexible:
            by_tag = {s.field.tag: s for s in self.tagged}
            last = -1
            for _ in range(p._read_uvarint(stream)):
                tag = p._read_uvarint(stream)
                size = p._read_uvarint(stream)
                if tag <= last:
                    raise ProtocolError(f"tag {tag} out of order")
                last = tag
                data = p._read(stream, size)
                if tag in by_tag:
                    result[by_tag[tag].field.name] = by_tag[tag].con._parsereport(BytesIO(data), context, path)
        return result

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        for slot in self.regular:
            slot.con._build(obj.get(slot.field.name, slot.default), stream, context, path)
        if self.flexible:
            entries = []
            for slot in self.tagged:
                value = obj.get(slot.field.name, MISSING)
                if value is MISSING or value == slot.default:
                    continue
                sub = BytesIO()
                slot.con._build(value, sub, context, path)
                entries.append((slot.field.tag, sub.getvalue()))
            p._write_uvarint(stream, len(entries))
            for tag, data in entries:
                p._write_uvarint(stream, tag)
                p._write_uvarint(stream, len(data))
                stream.write(data)
        return obj

    # -- code generation (construct's compiler) --------------------------------------------

    def _function_names(self, code: Any) -> tuple[str, str]:
        cache_ = code.__dict__.setdefault("kstruct_names", {})
        if id(self) in cache_:
            return cache_[id(self)]
        ident = code.allocateId()
        names = (f"pstruct_{ident}", f"bstruct_{ident}")
        cache_[id(self)] = names
        code.append(self._gen_parse_function(names[0], code))
        code.append(self._gen_build_function(names[1], code))
        return names

    def _default_expr(self, slot: _Slot, code: Any) -> str:
        if slot.mutable_default:
            if isinstance(slot.default, list):
                return "[]"
            name = f"default_{code.allocateId()}"
            code.linkedinstances[name] = slot.field
            code.append(f"def {name}():\n    return default_struct(linkedinstances[{name!r}].fields, {self.version})\n")
            return f"{name}()"
        if isinstance(slot.default, uuid.UUID):
            return "ZERO_UUID" if slot.default == ZERO_UUID else f"uuid.UUID({str(slot.default)!r})"
        return repr(slot.default)

    def _default_value(self, slot: _Slot, code: Any) -> str:
        """An expression for the field's default to compare with (one shared value, never handed out)."""
        if not slot.mutable_default:
            return self._default_expr(slot, code)
        name = f"dc_{code.allocateId()}"
        code.linkedinstances[name] = slot.default
        return f"linkedinstances[{name!r}]"

    def _groups(self) -> list[list[_Slot]]:
        """Runs of consecutive fixed-width fields are read and written with one struct call."""
        groups: list[list[_Slot]] = []
        for slot in self.regular:
            fixed = slot.con is not None and slot.con.fmt is not None
            if fixed and groups and groups[-1][0].con.fmt is not None:
                groups[-1].append(slot)
            else:
                groups.append([slot])
        return groups

    def _gen_parse_function(self, name: str, code: Any) -> str:
        lines = [f"def {name}(buf, pos):", "    r = Obj()"]
        for group in self._groups():
            if group[0].con.fmt is not None:
                fmt = "".join(s.con.fmt for s in group)
                sname = p.code_struct(code, fmt)
                targets = ", ".join(f"r[{s.field.name!r}]" for s in group)
                lines.append(f"    ({targets},) = {sname}.unpack_from(buf, pos)")
                lines.append(f"    pos += {struct.calcsize('>' + fmt)}")
            else:
                slot = group[0]
                lines += ["    " + s for s in slot.con.gen_parse(f"r[{slot.field.name!r}]", code)]
        for slot in self.absent + self.tagged:
            lines.append(f"    r[{slot.field.name!r}] = {self._default_expr(slot, code)}")
        if self.flexible:
            lines += [
                "    if buf[pos] == 0:",  # no tagged fields: the usual case, one byte
                "        pos += 1",
                "    else:",
                "        _nt, pos = rd_uvarint(buf, pos)",
                "        _last = -1",
                "        for _ in range(_nt):",
                "            _tag, pos = rd_uvarint(buf, pos)",
                "            _size, pos = rd_uvarint(buf, pos)",
                "            if _tag <= _last:",
                "                raise ProtocolError('tagged fields out of order')",
                "            _last = _tag",
                "            _end = pos + _size",
                "            if _end > len(buf):",
                "                raise ProtocolError('tagged field runs past the end of the buffer')",
            ]
            for i, slot in enumerate(self.tagged):
                kw = "if" if i == 0 else "elif"
                lines.append(f"            {kw} _tag == {slot.field.tag}:")
                lines += ["                " + s for s in slot.con.gen_parse(f"r[{slot.field.name!r}]", code)]
            lines.append("            pos = _end")
        lines.append("    return r, pos")
        return "\n".join(lines) + "\n"

    def _gen_build_function(self, name: str, code: Any) -> str:
        lines = [f"def {name}(obj, out):", "    g = obj.get"]
        for group in self._groups():
            if group[0].con.fmt is not None:
                fmt = "".join(s.con.fmt for s in group)
                sname = p.code_struct(code, fmt)
                noted = [s for s in group if s.field.name == "error_code"]
                for s in noted:
                    lines.append(f"    _ec = g('error_code', {s.default!r})")
                args = ", ".join("_ec" if s in noted else f"g({s.field.name!r}, {s.default!r})" for s in group)
                lines.append(f"    out += {sname}.pack({args})")
                if noted:
                    lines.append("    if _ec:")
                    lines.append("        out.errors.append(_ec)")
            else:
                slot = group[0]
                var = f"_v{code.allocateId()}"
                lines.append(f"    {var} = g({slot.field.name!r}, {self._default_expr(slot, code)})")
                lines += ["    " + s for s in slot.con.gen_build(var, code)]
        if self.flexible:
            if not self.tagged:
                lines.append("    out.append(0)")
            else:
                lines.append("    _tags = None")  # a list only once a tagged field is present
                for slot in self.tagged:
                    var = f"_t{code.allocateId()}"
                    lines.append(f"    {var} = g({slot.field.name!r}, MISSING)")
                    lines.append(f"    if {var} is not MISSING and {var} != {self._default_value(slot, code)}:")
                    lines.append("        _outer = out")
                    lines.append("        out = Writer()")
                    lines += ["        " + s for s in slot.con.gen_build(var, code)]
                    lines.append("        if _tags is None:")
                    lines.append("            _tags = []")
                    lines.append(f"        _tags.append(({slot.field.tag}, out))")
                    lines.append("        out = _outer")
                lines += [
                    "    if _tags is None:",
                    "        out.append(0)",
                    "    else:",
                    "        wr_uvarint(out, len(_tags))",
                    "        for _tag, _data in _tags:",
                    "            wr_uvarint(out, _tag)",
                    "            wr_uvarint(out, len(_data))",
                    "            out += _data",
                ]
        lines.append("    return obj")
        return "\n".join(lines) + "\n"

    def gen_parse(self, target: str, code: Any) -> list[str]:
        pname, _ = self._function_names(code)
        return [f"{target}, pos = {pname}(buf, pos)"]

    def gen_build(self, expr: str, code: Any) -> list[str]:
        _, bname = self._function_names(code)
        return [f"{bname}({expr}, out)"]

    def _emitparse(self, code: Any) -> str:
        _prelude(code)
        pname, _ = self._function_names(code)
        code.append(f"def top_{pname}(io, this):\n    r, io.pos = {pname}(io.buf, io.pos)\n    return r\n")
        return f"top_{pname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        _prelude(code)
        _, bname = self._function_names(code)
        return f"{bname}(obj, io)"


class KNullableStruct(KConstruct):
    """A struct-typed field that may be null: int8 marker (-1 null, 1 present) then the struct."""

    def __init__(self, inner: KStruct) -> None:
        super().__init__()
        self.inner = inner

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        marker = struct.unpack(">b", p._read(stream, 1))[0]
        return None if marker < 0 else self.inner._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        if obj is None:
            stream.write(b"\xff")
        else:
            stream.write(b"\x01")
            self.inner._build(obj, stream, context, path)
        return obj

    def gen_parse(self, target: str, code: Any) -> list[str]:
        return ["if buf[pos] >= 128:", f"    {target} = None", "    pos += 1", "else:", "    pos += 1"] + [
            "    " + s for s in self.inner.gen_parse(target, code)
        ]

    def gen_build(self, expr: str, code: Any) -> list[str]:
        return [f"if {expr} is None:", "    out.append(255)", "else:", "    out.append(1)"] + [
            "    " + s for s in self.inner.gen_build(expr, code)
        ]


def _prelude(code: Any) -> None:
    code.append(
        "from protocol.primitives import Obj, Writer, ZERO_UUID, rd_uvarint, wr_uvarint, rd_count, wr_count\n"
        "from protocol.primitives import rd_string, rd_nstring, rd_cstring, rd_cnstring\n"
        "from protocol.primitives import rd_bytes, rd_nbytes, rd_cbytes, rd_cnbytes, rd_uuid\n"
        "from protocol.primitives import wr_string, wr_nstring, wr_cstring, wr_cnstring\n"
        "from protocol.primitives import wr_bytes, wr_nbytes, wr_cbytes, wr_cnbytes, wr_uuid\n"
        "from protocol.primitives import rd_nrecords, rd_cnrecords, wr_nrecords, wr_cnrecords\n"
        "from protocol.errors import ProtocolError\n"
        "from protocol.schema import MISSING, default_struct\n"
        "import uuid\n"
    )


def field_construct(f: Field, version: int, flexible: bool) -> KConstruct:
    """The construct for field ``f`` at ``version`` (``flexible`` = the message version is flexible)."""
    compact = flexible and f.flexible
    nullable = in_range(f.nullable, version)
    elem = f.element
    if elem == "struct":
        inner: KConstruct = KStruct(f.fields, version, flexible)
        if not f.is_array and nullable:
            inner = KNullableStruct(inner)  # type: ignore[arg-type]
    elif elem in _FIXED:
        inner = p.KBool() if elem == "bool" else p.KFixed(_FIXED[elem])
    elif elem == "string":
        inner = p.KString(compact, nullable and not f.is_array)
    elif elem == "records" and not f.is_array:
        inner = p.KRecords(compact)
    elif elem in ("bytes", "records"):
        inner = p.KBytes(compact, nullable and not f.is_array)
    elif elem == "uuid":
        inner = p.KUuid()
    else:
        raise ValueError(f"unknown field type {f.type!r}")
    if f.is_array:
        return p.KArray(inner, compact, nullable)
    return inner


class _Reader:
    """The stream our compiled parsers read: the whole buffer plus a cursor."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: Any, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos


_DECODE_ERRORS = (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError, OverflowError)


class Message:
    """A request, response or standalone struct with all of its versions."""

    def __init__(self, name: str, *, versions: tuple[int, int], flexible_from: int | None,
                 fields: tuple[Field, ...], api_key: int | None = None) -> None:
        self.name = name
        self.api_key = api_key
        self.min_version, self.max_version = versions
        self.flexible_from = flexible_from
        self.fields = fields
        self._parsers: dict[int, Any] = {}
        self._builders: dict[int, Any] = {}
        self._shapes: dict[int, _Shape] = {}
        _messages.append(self)

    def __repr__(self) -> str:
        return f"<Message {self.name} v{self.min_version}-{self.max_version}>"

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            raise ProtocolError(f"{self.name} has no version {version}")

    def struct(self, version: int) -> KStruct:
        """The (uncompiled) construct for ``version``."""
        return _struct(self, version)

    def compiled(self, version: int) -> Construct:
        """The construct for ``version``, compiled by construct into Python source."""
        return _compiled(self, version)

    def default(self, version: int) -> Obj:
        return default_struct(self.fields, version)

    def _codec(self, version: int) -> tuple[Any, Any]:
        parse = self._parsers.get(version)
        if parse is None:
            self.check_version(version)
            compiled = self.compiled(version)
            module = compiled.module
            pname, bname = _names_of(module, self.struct(version))
            parse = self._parsers[version] = module.__dict__[pname]
            build = module.__dict__[bname]
            self._builders[version] = self._strict_builder(version, build) if _strict else build
        return parse, self._builders[version]

    def check_keys(self, version: int, obj: Any) -> None:
        """Strict encoding's check: :class:`UnknownFieldError` for a key no version has a field for,
        in ``obj`` and every struct the encoder walks at ``version``."""
        shape = self._shapes.get(version)
        if shape is None:
            shape = self._shapes[version] = _Shape(self.fields, version)
        shape.check(obj, self.name, f"{self.name} v{version}")

    def _strict_builder(self, version: int, build: Any) -> Any:
        check = self.check_keys

        def strict_build(obj: Any, out: Any) -> Any:
            check(version, obj)
            return build(obj, out)

        return strict_build

    def decode(self, version: int, data: Any, pos: int = 0) -> Obj:
        """Decode one message of ``version`` from ``data`` starting at ``pos``."""
        return self.decode_from(version, data, pos)[0]

    def decode_from(self, version: int, data: Any, pos: int = 0) -> tuple[Obj, int]:
        """Decode and also return the position just past the message."""
        parse = self._parsers.get(version) or self._codec(version)[0]
        try:
            return parse(data, pos)
        except ProtocolError:
            raise
        except _DECODE_ERRORS as exc:
            raise ProtocolError(f"malformed {self.name} v{version}: {exc}") from None

    def encode(self, version: int, obj: Any) -> bytes:
        out = Writer()
        self.encode_into(version, obj, out)
        if out.splices:
            raise ProtocolError("external bytes need encode_into with a Writer")
        return bytes(out)

    def encode_into(self, version: int, obj: Any, out: bytearray) -> None:
        build = self._builders.get(version) or self._codec(version)[1]
        try:
            build(obj, out)
        except ProtocolError:
            raise
        except (struct.error, TypeError, AttributeError, OverflowError, ValueError) as exc:
            raise ProtocolError(f"cannot encode {self.name} v{version}: {exc}") from None


def _names_of(module: Any, kstruct: KStruct) -> tuple[str, str]:
    return module.kstruct_names[id(kstruct)]


@cache
def _struct(message: Message, version: int) -> KStruct:
    message.check_version(version)
    return KStruct(message.fields, version, message.is_flexible(version))


@cache
def _compiled(message: Message, version: int) -> Construct:
    kstruct = _struct(message, version)
    code = _TrackingCodeGen()
    compiled = _compile_with(kstruct, code)
    compiled.module.kstruct_names = code.kstruct_names
    return compiled


class _TrackingCodeGen(CodeGen):
    def __init__(self) -> None:
        super().__init__()
        self.kstruct_names: dict[int, tuple[str, str]] = {}


def _compile_with(kstruct: KStruct, code: _TrackingCodeGen) -> Construct:
    """``Construct.compile`` with our CodeGen, so the struct's function names can be looked up."""
    import construct.core as cc

    original = cc.CodeGen
    cc.CodeGen = lambda: code  # type: ignore[assignment,misc]
    try:
        compiled = kstruct.compile()
    finally:
        cc.CodeGen = original
    compiled.module.linkedinstances.update(code.linkedinstances)
    return compiled


def parse_uncompiled(message: Message, version: int, data: bytes) -> Obj:
    """Decode with the reference (interpreted construct) path; used to cross-check the compiler."""
    try:
        return message.struct(version).parse(data)
    except ProtocolError:
        raise
    except Exception as exc:
        raise ProtocolError(str(exc)) from None


def build_uncompiled(message: Message, version: int, obj: Any) -> bytes:
    if _strict:
        message.check_keys(version, obj)
    return message.struct(version).build(obj)


class _Shape:
    """What strict encoding accepts in a message or struct: the names of its fields in every version;
    and the shapes of its structs that ``version`` carries."""

    __slots__ = ("names", "structs")

    def __init__(self, fields: tuple[Field, ...], version: int) -> None:
        self.names = frozenset(f.name for f in fields)
        self.structs = tuple((f.name, f.is_array, _Shape(f.fields, version)) for f in fields
                             if f.element == "struct" and in_range(f.versions, version))

    def check(self, obj: Any, path: str, message: str) -> None:
        if not isinstance(obj, Mapping):
            raise UnknownFieldError(_refused(f"{message}: {path} is a {type(obj).__name__}, not a dict"))
        names = self.names
        for key in obj:
            if key not in names:
                close = difflib.get_close_matches(str(key), sorted(names), n=1, cutoff=0.0)
                raise UnknownFieldError(_refused(
                    f"{message}: {path} has no field {key!r} in any version"
                    f" (closest known field: {close[0] if close else None!r})"))
        for name, is_array, shape in self.structs:
            value = obj.get(name)
            if value is None:
                continue
            if is_array:
                for i, item in enumerate(value):
                    shape.check(item, f"{path}.{name}[{i}]", message)
            else:
                shape.check(value, f"{path}.{name}", message)


def _refused(text: str) -> str:
    """Note a refusal in the strict log (when one is named) and return its text."""
    log = os.environ.get(STRICT_LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"pid {os.getpid()}: {text}\n")
    return text
