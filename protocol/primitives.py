"""Kafka's primitive wire types as ``construct`` constructs.

Each type is a :class:`construct.Construct` with two faces:

* the ordinary construct interface (``_parse``/``_build`` on a stream), the
  reference implementation used when a struct is not compiled;
* a code-generation interface (``gen_parse``/``gen_build``) that
  :class:`protocol.schema.KStruct` uses when ``construct`` compiles a message:
  it emits straight-line Python working on ``buf``/``pos`` (parsing) and a
  ``bytearray`` ``out`` (building).  The runtime helpers those snippets call
  are the ``rd_*``/``wr_*`` functions below.

Every read checks lengths against the bytes actually present before slicing,
so a hostile length prefix never causes an allocation of its claimed size.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from construct import Construct

from protocol.errors import ProtocolError

__all__ = [
    "MAX_VARINT_BYTES",
    "ExternalBytes",
    "KArray",
    "KBool",
    "KBytes",
    "KFixed",
    "KRecords",
    "KString",
    "KUuid",
    "Obj",
    "UVarint",
    "Writer",
    "ZERO_UUID",
]

MAX_VARINT_BYTES = 5
ZERO_UUID = uuid.UUID(int=0)

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_I32u = struct.Struct(">I")
_i16_unpack = _i16.unpack_from
_i32_unpack = _i32.unpack_from
_i16_pack = _i16.pack
_i32_pack = _i32.pack


class Obj(dict):
    """A decoded message or sub-struct: a dict whose keys also read as attributes."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __reduce__(self) -> tuple[Any, ...]:
        return (Obj, (dict(self),))


class Writer(bytearray):
    """Output buffer that also records :class:`ExternalBytes` to splice in later, and the non-zero
    ``error_code`` values the encoded structs carried (``errors``, for metrics: no second walk of
    the response; codes inside tagged fields are not included)."""

    __slots__ = ("errors", "splices")

    def __init__(self) -> None:
        super().__init__()
        self.splices: list[tuple[int, ExternalBytes]] = []
        self.errors: list[int] = []


class ExternalBytes:
    """Bytes that live elsewhere (a file region): encoded as a length prefix only.

    The encoder records the position where the content belongs; the caller
    sends the encoded bytes with the content spliced in (for example with
    ``sendfile``), so record data is never copied through Python.
    """

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


# --------------------------------------------------------------------------
# runtime helpers called by generated code: (buf, pos) -> (value, pos)
# --------------------------------------------------------------------------


def rd_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 7 * MAX_VARINT_BYTES:
            raise ProtocolError("unsigned varint longer than 5 bytes")


def wr_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ProtocolError(f"negative unsigned varint {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _span(buf: Any, pos: int, n: int) -> int:
    end = pos + n
    if end > len(buf):
        raise ProtocolError(f"length {n} runs past the end of the buffer")
    return end


def rd_string(buf: Any, pos: int) -> tuple[str, int]:
    (n,) = _i16_unpack(buf, pos)
    pos += 2
    if n < 0:
        raise ProtocolError(f"negative string length {n}")
    end = _span(buf, pos, n)
    return str(buf[pos:end], "utf-8"), end


def rd_nstring(buf: Any, pos: int) -> tuple[str | None, int]:
    (n,) = _i16_unpack(buf, pos)
    pos += 2
    if n < 0:
        if n == -1:
            return None, pos
        raise ProtocolError(f"negative string length {n}")
    end = _span(buf, pos, n)
    return str(buf[pos:end], "utf-8"), end


def rd_cstring(buf: Any, pos: int) -> tuple[str, int]:
    n = buf[pos]  # the one-byte length inline (strings under 127 bytes)
    if n < 0x80:
        pos += 1
    else:
        n, pos = rd_uvarint(buf, pos)
    if n == 0:
        raise ProtocolError("null compact string in a non-nullable field")
    end = pos + n - 1
    if end > len(buf):
        _span(buf, pos, n - 1)
    return str(buf[pos:end], "utf-8"), end


def rd_cnstring(buf: Any, pos: int) -> tuple[str | None, int]:
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = rd_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(buf):
        _span(buf, pos, n - 1)
    return str(buf[pos:end], "utf-8"), end


def rd_bytes(buf: Any, pos: int) -> tuple[bytes, int]:
    (n,) = _i32_unpack(buf, pos)
    pos += 4
    if n < 0:
        raise ProtocolError(f"negative bytes length {n}")
    end = _span(buf, pos, n)
    return bytes(buf[pos:end]), end


def rd_nbytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    (n,) = _i32_unpack(buf, pos)
    pos += 4
    if n < 0:
        if n == -1:
            return None, pos
        raise ProtocolError(f"negative bytes length {n}")
    end = _span(buf, pos, n)
    return bytes(buf[pos:end]), end


def rd_cbytes(buf: Any, pos: int) -> tuple[bytes, int]:
    n, pos = rd_uvarint(buf, pos)
    if n == 0:
        raise ProtocolError("null compact bytes in a non-nullable field")
    end = _span(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def rd_cnbytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    n, pos = rd_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _span(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def rd_nrecords(buf: Any, pos: int) -> tuple[memoryview | None, int]:
    """RECORDS: a view of the frame's bytes, not a copy (the broker stamps and appends batches in place)."""
    (n,) = _i32_unpack(buf, pos)
    pos += 4
    if n < 0:
        if n == -1:
            return None, pos
        raise ProtocolError(f"negative records length {n}")
    end = _span(buf, pos, n)
    return memoryview(buf)[pos:end], end


def rd_cnrecords(buf: Any, pos: int) -> tuple[memoryview | None, int]:
    """COMPACT_RECORDS, as :func:`rd_nrecords`."""
    n, pos = rd_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _span(buf, pos, n - 1)
    return memoryview(buf)[pos:end], end


def rd_count(buf: Any, pos: int, compact: bool, nullable: bool, min_size: int) -> tuple[int | None, int]:
    """Read an array count; ``None`` for a null array.  Rejects counts the buffer cannot hold."""
    if compact:
        n = buf[pos]
        if n < 0x80:
            pos += 1
        else:
            n, pos = rd_uvarint(buf, pos)
        n -= 1
    else:
        (n,) = _i32_unpack(buf, pos)
        pos += 4
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise ProtocolError(f"invalid array length {n}")
    if n * min_size > len(buf) - pos:
        raise ProtocolError(f"array of {n} elements cannot fit in the remaining {len(buf) - pos} bytes")
    return n, pos


def rd_uuid(buf: Any, pos: int) -> tuple[uuid.UUID, int]:
    end = _span(buf, pos, 16)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def _utf8(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise ProtocolError(f"expected a string, got {type(value).__name__}")


def wr_string(out: bytearray, value: Any) -> None:
    if value is None:
        raise ProtocolError("null in a non-nullable string field")
    data = _utf8(value)
    out += _i16_pack(len(data))
    out += data


def wr_nstring(out: bytearray, value: Any) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = _utf8(value)
    out += _i16_pack(len(data))
    out += data


def wr_cstring(out: bytearray, value: Any) -> None:
    if type(value) is str:
        data = value.encode("utf-8")
    elif value is None:
        raise ProtocolError("null in a non-nullable string field")
    else:
        data = _utf8(value)
    n = len(data) + 1
    if n < 0x80:
        out.append(n)
    else:
        wr_uvarint(out, n)
    out += data


def wr_cnstring(out: bytearray, value: Any) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode("utf-8") if type(value) is str else _utf8(value)
    n = len(data) + 1
    if n < 0x80:
        out.append(n)
    else:
        wr_uvarint(out, n)
    out += data


def _external(out: bytearray, value: ExternalBytes) -> None:
    if not isinstance(out, Writer):
        raise ProtocolError("external bytes need a Writer output")
    out.splices.append((len(out), value))


def wr_bytes(out: bytearray, value: Any) -> None:
    if value is None:
        raise ProtocolError("null in a non-nullable bytes field")
    wr_nbytes(out, value)


def wr_nbytes(out: bytearray, value: Any) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
    elif isinstance(value, ExternalBytes):
        out += _i32_pack(value.size)
        _external(out, value)
    else:
        out += _i32_pack(len(value))
        out += value


def wr_cbytes(out: bytearray, value: Any) -> None:
    if value is None:
        raise ProtocolError("null in a non-nullable bytes field")
    wr_cnbytes(out, value)


def wr_cnbytes(out: bytearray, value: Any) -> None:
    if value is None:
        out.append(0)
    elif isinstance(value, ExternalBytes):
        wr_uvarint(out, value.size + 1)
        _external(out, value)
    else:
        wr_uvarint(out, len(value) + 1)
        out += value


wr_nrecords = wr_nbytes
wr_cnrecords = wr_cnbytes


def wr_count(out: bytearray, value: Any, compact: bool, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise ProtocolError("null in a non-nullable array field")
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    if compact:
        wr_uvarint(out, len(value) + 1)
    else:
        out += _i32_pack(len(value))


def wr_uuid(out: bytearray, value: Any) -> None:
    if isinstance(value, uuid.UUID):
        out += value.bytes
    elif isinstance(value, bytes | bytearray) and len(value) == 16:
        out += value
    elif value is None:
        out += ZERO_UUID.bytes
    else:
        raise ProtocolError(f"expected a UUID, got {value!r}")


RUNTIME = {
    name: obj
    for name, obj in globals().items()
    if name.startswith(("rd_", "wr_")) and callable(obj)
}


# --------------------------------------------------------------------------
# construct classes
# --------------------------------------------------------------------------


def _read(stream: Any, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise ProtocolError(f"needed {n} bytes, only {len(data)} left")
    return data


def _read_uvarint(stream: Any) -> int:
    result = 0
    for shift in range(0, 7 * MAX_VARINT_BYTES, 7):
        b = _read(stream, 1)[0]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
    raise ProtocolError("unsigned varint longer than 5 bytes")


def _write_uvarint(stream: Any, value: int) -> None:
    out = bytearray()
    wr_uvarint(out, value)
    stream.write(bytes(out))


class KConstruct(Construct):
    """Base of our primitives: adds the code-generation interface."""

    #: smallest encoded size, used to reject impossible array counts
    min_size = 1
    #: struct format character when this is a fixed-width number, else None
    fmt: str | None = None

    def gen_parse(self, target: str, code: Any) -> list[str]:
        """Statements that read one value from ``buf`` at ``pos`` into ``target``."""
        raise NotImplementedError

    def gen_build(self, expr: str, code: Any) -> list[str]:
        """Statements that append the encoding of ``expr`` to ``out``."""
        raise NotImplementedError

    def _emitparse(self, code: Any) -> str:
        fname = f"kparse_{code.allocateId()}"
        body = "\n".join("    " + line for line in self.gen_parse("value", code))
        code.append(f"def {fname}(io, this):\n    buf = io.buf\n    pos = io.pos\n{body}\n    io.pos = pos\n    return value\n")
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        fname = f"kbuild_{code.allocateId()}"
        body = "\n".join("    " + line for line in self.gen_build("obj", code))
        code.append(f"def {fname}(obj, io, this):\n    out = io\n{body}\n    return obj\n")
        return f"{fname}(obj, io, this)"


class KFixed(KConstruct):
    """A fixed-width big-endian number (int8…int64, uint16, uint32, float64)."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt
        self._struct = struct.Struct(">" + fmt)
        self.min_size = self._struct.size

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return self._struct.unpack(_read(stream, self._struct.size))[0]

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        try:
            stream.write(self._struct.pack(obj))
        except struct.error as exc:
            raise ProtocolError(str(exc)) from None
        return obj

    def gen_parse(self, target: str, code: Any) -> list[str]:
        name = code_struct(code, self.fmt)
        return [f"{target} = {name}.unpack_from(buf, pos)[0]", f"pos += {self._struct.size}"]

    def gen_build(self, expr: str, code: Any) -> list[str]:
        name = code_struct(code, self.fmt)
        return [f"out += {name}.pack({expr})"]


class KBool(KFixed):
    """One byte; any non-zero value reads as true."""

    def __init__(self) -> None:
        super().__init__("?")

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return _read(stream, 1)[0] != 0


class KUuid(KConstruct):
    """16 raw bytes as :class:`uuid.UUID`."""

    min_size = 16

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return uuid.UUID(bytes=_read(stream, 16))

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        out = bytearray()
        wr_uuid(out, obj)
        stream.write(bytes(out))
        return obj

    def gen_parse(self, target: str, code: Any) -> list[str]:
        return [f"{target}, pos = rd_uuid(buf, pos)"]

    def gen_build(self, expr: str, code: Any) -> list[str]:
        return [f"wr_uuid(out, {expr})"]


class UVarint(KConstruct):
    """Unsigned LEB128 varint, at most five bytes."""

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return _read_uvarint(stream)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        _write_uvarint(stream, obj)
        return obj

    def gen_parse(self, target: str, code: Any) -> list[str]:
        return [f"{target}, pos = rd_uvarint(buf, pos)"]

    def gen_build(self, expr: str, code: Any) -> list[str]:
        return [f"wr_uvarint(out, {expr})"]


class _Sized(KConstruct):
    """Shared shape of strings and byte strings: length prefix + payload."""

    kind = ""

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable
        self.min_size = 1 if compact else (2 if self.kind == "string" else 4)
        prefix = ("c" if compact else "") + ("n" if nullable else "")
        self._rd = f"rd_{prefix}{self.kind}"
        self._wr = f"wr_{prefix}{self.kind}"

    def _read_len(self, stream: Any) -> int | None:
        if self.compact:
            n = _read_uvarint(stream) - 1
        elif self.kind == "string":
            n = _i16.unpack(_read(stream, 2))[0]
        else:
            n = _i32.unpack(_read(stream, 4))[0]
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise ProtocolError(f"invalid {self.kind} length {n}")
        return n

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        n = self._read_len(stream)
        if n is None:
            return None
        data = _read(stream, n)
        return data.decode("utf-8") if self.kind == "string" else data

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        out = bytearray()
        RUNTIME[self._wr](out, obj)
        stream.write(bytes(out))
        return obj

    def gen_parse(self, target: str, code: Any) -> list[str]:
        return [f"{target}, pos = {self._rd}(buf, pos)"]

    def gen_build(self, expr: str, code: Any) -> list[str]:
        return [f"{self._wr}(out, {expr})"]


class KString(_Sized):
    """STRING / NULLABLE_STRING / COMPACT_(NULLABLE_)STRING."""

    kind = "string"


class KBytes(_Sized):
    """BYTES / NULLABLE_BYTES / COMPACT_(NULLABLE_)BYTES; also RECORDS."""

    kind = "bytes"


class KRecords(_Sized):
    """RECORDS / COMPACT_RECORDS: nullable bytes that decode to a ``memoryview`` of the input."""

    kind = "records"

    def __init__(self, compact: bool) -> None:
        super().__init__(compact, True)


class KArray(KConstruct):
    """ARRAY / COMPACT_ARRAY of a primitive or a struct."""

    def __init__(self, element: KConstruct, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.element = element
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        n = _read_uvarint(stream) - 1 if self.compact else _i32.unpack(_read(stream, 4))[0]
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise ProtocolError(f"invalid array length {n}")
        items: list[Any] = []
        for _ in range(n):
            items.append(self.element._parsereport(stream, context, path))
        return items

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        out = bytearray()
        wr_count(out, obj, self.compact, self.nullable)
        stream.write(bytes(out))
        for item in obj or ():
            self.element._build(item, stream, context, path)
        return obj

    def gen_parse(self, target: str, code: Any) -> list[str]:
        var = f"_a{code.allocateId()}"
        inner = self.element.gen_parse(f"{var}_v", code)
        lines = [
            f"{var}_n, pos = rd_count(buf, pos, {self.compact}, {self.nullable}, {max(self.element.min_size, 0)})",
            f"if {var}_n is None:",
            f"    {target} = None",
            "else:",
            f"    {var} = []",
            f"    for _ in range({var}_n):",
        ]
        lines += ["        " + line for line in inner]
        lines += [f"        {var}.append({var}_v)", f"    {target} = {var}"]
        return lines

    def gen_build(self, expr: str, code: Any) -> list[str]:
        var = f"_a{code.allocateId()}"
        lines = [f"{var} = {expr}"]
        if self.compact:  # the usual count (under 127 elements) as one byte, inline
            lines += [f"if {var} is not None and len({var}) < 127:",
                      f"    out.append(len({var}) + 1)",
                      "else:",
                      f"    wr_count(out, {var}, True, {self.nullable})"]
        else:
            lines.append(f"wr_count(out, {var}, False, {self.nullable})")
        lines.append(f"for {var}_v in {var} or ():")
        lines += ["    " + line for line in self.element.gen_build(f"{var}_v", code)]
        return lines


def code_struct(code: Any, fmt: str) -> str:
    """Name of a module-level ``struct.Struct`` for ``fmt`` in the generated code."""
    name = "_S_" + "".join(c if c.isalnum() else "x" for c in fmt).replace("?", "b")
    code.append(f"{name} = struct.Struct('>{fmt}')\n")
    return name
