# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled inner loops of :mod:`protocol.records` (built at install time when a C compiler and
Cython are there; :mod:`protocol.records` falls back to its pure-Python loops otherwise).

Each function here has a pure-Python twin in ``protocol.records`` with the same arguments,
results and errors (``tests/protocol/test_compiled_records.py`` holds them to that):

* :func:`decode_rows` — the records of one (decompressed) batch body as rows of a tuple type;
* :class:`ColumnBuilder` — the same records appended to column buffers (Arrow layout: offsets,
  validity bitmaps, data), for readers that want columns rather than objects;
* :func:`encode_records` — the records section of a batch being built;
* :func:`murmur2` — Kafka's ``Utils.murmur2``, the key hash of the default partitioner (its twin
  is ``client.partitioner.py_murmur2``; ``tests/client/test_partitioner.py`` holds them to that);
* :func:`complete_deliveries` — the producer's delivery futures of an acknowledged batch (its twin
  is ``client.accumulator.py_complete_deliveries``; ``tests/client/test_producer_accumulator.py``).

Every length and count read from the input is checked against the bytes present before it is
used; malformed input raises ``CorruptRecordError`` (the exception class is passed in, so this
module depends on nothing but the C API).
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_Append
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.long cimport PyLong_CheckExact
from cpython.unicode cimport PyUnicode_CheckExact, PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uint8_t
from libc.string cimport memcpy


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object)
    int PyGC_Disable()
    int PyGC_Enable()
    ctypedef PyObject* (*allocfunc)(PyTypeObject*, Py_ssize_t)
    ctypedef struct _Allocating "PyTypeObject":
        allocfunc tp_alloc


cdef object _corrupt = ValueError  # replaced by set_error_class()


def set_error_class(cls):
    """The exception malformed input raises (``protocol.records.CorruptRecordError``)."""
    global _corrupt
    _corrupt = cls


cdef inline int _varint(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t end, int max_bytes, int64_t* out) except -1:
    """A zig-zag varint of at most ``max_bytes`` bytes at ``p[pos[0]]``."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t b
    cdef Py_ssize_t i = pos[0]
    while True:
        if i >= end:
            raise _corrupt("record truncated")
        b = p[i]
        i += 1
        result |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 7 * max_bytes:
            raise _corrupt(f"varint longer than {max_bytes} bytes")
    pos[0] = i
    out[0] = <int64_t>(result >> 1) ^ -(<int64_t>(result & 1))
    return 0


cdef object _new_row(PyTypeObject* kind, Py_ssize_t n):
    """A tuple of type ``kind`` with ``n`` empty slots (what ``tuple.__new__(kind, ...)`` allocates)."""
    cdef PyObject* raw = (<_Allocating*>kind).tp_alloc(kind, n)
    if raw == NULL:
        raise MemoryError()
    row = <object>raw  # takes a second reference...
    Py_DECREF(row)  # ...and gives it back: ``row`` owns the new object
    return row


cdef inline void _set(object row, Py_ssize_t i, object value):
    Py_INCREF(value)
    PyTuple_SET_ITEM(row, i, value)


cdef object _headers(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t record_end):
    cdef int64_t n, hkl, hvl, h
    cdef Py_ssize_t i
    cdef list headers = []
    _varint(p, pos, record_end, 5, &n)
    if n == 0:
        return headers
    if n < 0 or n * 2 > record_end - pos[0]:
        raise _corrupt(f"header count {n} out of bounds")
    for h in range(n):
        _varint(p, pos, record_end, 5, &hkl)
        i = pos[0]
        if hkl < 0 or i + hkl > record_end:
            raise _corrupt(f"header key length {hkl} out of bounds")
        try:
            hkey = PyUnicode_DecodeUTF8(<const char*>p + i, hkl, NULL)
        except UnicodeDecodeError:
            raise _corrupt("header key is not UTF-8") from None
        pos[0] = i + hkl
        _varint(p, pos, record_end, 5, &hvl)
        i = pos[0]
        if hvl >= 0:
            if i + hvl > record_end:
                raise _corrupt(f"header value length {hvl} out of bounds")
            hvalue = PyBytes_FromStringAndSize(<const char*>p + i, hvl)
            pos[0] = i + hvl
        elif hvl == -1:
            hvalue = None
        else:
            raise _corrupt(f"negative header value length {hvl}")
        headers.append((hkey, hvalue))
    return headers


cdef inline int _record_head(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t end, Py_ssize_t* record_end,
                             int64_t* ts_delta, int64_t* offset_delta) except -1:
    cdef int64_t length
    _varint(p, pos, end, 5, &length)
    if length < 6 or pos[0] + length > end:
        raise _corrupt(f"record length {length} out of bounds")
    record_end[0] = pos[0] + length
    pos[0] += 1  # attributes
    _varint(p, pos, record_end[0], 10, ts_delta)
    _varint(p, pos, record_end[0], 5, offset_delta)
    return 0


cdef inline int _field(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t record_end, Py_ssize_t* start,
                       int64_t* length, str what) except -1:
    """A nullable length-prefixed field: its start and length (-1 for null)."""
    _varint(p, pos, record_end, 5, length)
    if length[0] >= 0:
        if pos[0] + length[0] > record_end:
            raise _corrupt(f"record {what} length {length[0]} out of bounds")
        start[0] = pos[0]
        pos[0] += length[0]
    elif length[0] != -1:
        raise _corrupt(f"negative record {what} length {length[0]}")
    return 0


cdef const uint8_t* _records_range(Py_buffer* view, Py_ssize_t start, Py_ssize_t end,
                                   Py_ssize_t count) except NULL:
    """The start of the buffer once ``[start, end)`` lies inside it and can hold ``count`` records
    (each at least 7 bytes)."""
    if start < 0 or end > view.len or start > end:
        raise ValueError("record range outside the buffer")
    if count < 0:
        raise _corrupt(f"negative record count {count}")
    if count * 7 > end - start:
        raise _corrupt(f"record count {count} impossible in {end - start} bytes")
    return <const uint8_t*>view.buf


#: what this build of the codec can do; ``protocol.records`` ignores a build older than it expects
#: (2: rows of a row type with defaulted fields after the eight, see :func:`decode_rows`;
#: 3: ``decode_rows(..., extras)``, the values of those fields given instead of their defaults)
CODEC_VERSION = 3


cdef tuple _row_extras(row_type, extras):
    """The values of a ``NamedTuple`` row type's fields after the first eight: ``extras`` (one for each
    of them) or, when None, their defaults (TypeError when one has none, or ``extras`` does not fit)."""
    fields = getattr(row_type, "_fields", ())
    if extras is not None:
        extras = tuple(extras)
        if len(extras) != max(0, len(fields) - 8):
            raise TypeError(f"row_type has {max(0, len(fields) - 8)} fields after the eighth, "
                            f"not the {len(extras)} extras given")
        return extras
    if len(fields) <= 8:
        return ()
    defaults = getattr(row_type, "_field_defaults", {})
    missing = [f for f in fields[8:] if f not in defaults]
    if missing:
        raise TypeError(f"row_type fields after the eighth need defaults: {missing}")
    return tuple(defaults[f] for f in fields[8:])


def decode_rows(data, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
                int64_t base_timestamp, log_append_time, int timestamp_type, int64_t min_offset,
                row_type, topic, partition, list out, extras=None):
    """Append ``row_type(topic, partition, offset, timestamp, timestamp_type, key, value, headers)``
    for each of the ``count`` records in ``data[start:end]`` whose offset is >= ``min_offset``
    (``row_type`` is a tuple subclass, e.g. a ``NamedTuple`` with those eight fields, or with more
    after them that have defaults: each row holds ``extras`` there, or when None those defaults)."""
    cdef Py_buffer view
    cdef const uint8_t* p
    cdef Py_ssize_t pos, record_end, kstart = 0, vstart = 0
    cdef int64_t ts_delta, offset_delta, klen, vlen, offset
    cdef int64_t lat = 0
    cdef Py_ssize_t k
    cdef bint use_lat = log_append_time is not None
    cdef PyTypeObject* kind = <PyTypeObject*>row_type
    if not isinstance(row_type, type) or not issubclass(row_type, tuple):
        raise TypeError("row_type must be a tuple subclass")
    cdef tuple tail = _row_extras(row_type, extras)
    cdef Py_ssize_t width = 8 + len(tail)
    cdef Py_ssize_t e
    if use_lat:
        lat = log_append_time
    ts_type = timestamp_type
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    # The rows made here (tuples of a str, ints, bytes and a fresh list) cannot form reference
    # cycles, so the cyclic collector has nothing to find among them; left on, it would run every
    # few hundred rows and, as they survive into older generations, trigger full collections of
    # the whole process (two thirds of a consumer's CPU).  No Python code runs in this loop (the
    # GIL is held throughout), so pausing it here affects no other thread.
    gc_was_enabled = PyGC_Disable()
    try:
        p = _records_range(&view, start, end, count)
        pos = start
        for k in range(count):
            _record_head(p, &pos, end, &record_end, &ts_delta, &offset_delta)
            _field(p, &pos, record_end, &kstart, &klen, "key")
            _field(p, &pos, record_end, &vstart, &vlen, "value")
            headers = _headers(p, &pos, record_end)
            if pos != record_end:
                raise _corrupt("record length does not match its contents")
            offset = base_offset + offset_delta
            if offset < min_offset:
                continue
            row = _new_row(kind, width)
            _set(row, 0, topic)
            _set(row, 1, partition)
            _set(row, 2, offset)
            _set(row, 3, lat if use_lat else base_timestamp + ts_delta)
            _set(row, 4, ts_type)
            _set(row, 5, PyBytes_FromStringAndSize(<const char*>p + kstart, klen) if klen >= 0 else None)
            _set(row, 6, PyBytes_FromStringAndSize(<const char*>p + vstart, vlen) if vlen >= 0 else None)
            _set(row, 7, headers)
            for e in range(width - 8):
                _set(row, 8 + e, tail[e])
            PyList_Append(out, row)
        if pos != end:
            raise _corrupt(f"{end - pos} unexpected bytes after the last record")
    finally:
        if gc_was_enabled:
            PyGC_Enable()
        PyBuffer_Release(&view)


# ------------------------------------------------------------------------------------- columns

cdef class _Bytes:
    """A growable byte buffer (a bytearray underneath, so it can be handed out without a copy)."""

    cdef public bytearray data
    cdef Py_ssize_t size

    def __cinit__(self):
        self.data = bytearray(256)
        self.size = 0

    cdef inline char* reserve(self, Py_ssize_t n) except NULL:
        cdef Py_ssize_t cap = PyByteArray_GET_SIZE(self.data)
        if self.size + n > cap:
            while cap < self.size + n:
                cap *= 2
            if PyByteArray_Resize(self.data, cap) < 0:
                raise MemoryError()
        return PyByteArray_AS_STRING(self.data) + self.size

    cdef inline int add(self, const void* src, Py_ssize_t n) except -1:
        cdef char* dst = self.reserve(n)
        memcpy(dst, src, n)
        self.size += n
        return 0

    def finish(self):
        """The bytes written (the buffer itself, trimmed)."""
        del self.data[self.size:]
        return self.data


cdef class _Binary:
    """An Arrow binary column being built: validity bitmap, int32 offsets, data."""

    cdef _Bytes valid
    cdef _Bytes offsets
    cdef _Bytes data
    cdef public Py_ssize_t length
    cdef public Py_ssize_t nulls

    def __cinit__(self):
        cdef int32_t zero = 0
        self.valid = _Bytes()
        self.offsets = _Bytes()
        self.data = _Bytes()
        self.length = 0
        self.nulls = 0
        self.offsets.add(&zero, 4)

    cdef inline int add(self, const uint8_t* p, Py_ssize_t start, int64_t n) except -1:
        cdef Py_ssize_t i = self.length
        cdef int32_t end
        if i % 8 == 0:
            self.valid.reserve(1)[0] = 0
            self.valid.size += 1
        if n >= 0:
            if self.data.size + n > 0x7FFFFFFF:
                raise OverflowError("binary column larger than 2 GiB")
            PyByteArray_AS_STRING(self.valid.data)[i // 8] |= <char>(1 << (i % 8))
            self.data.add(p + start, n)
        else:
            self.nulls += 1
        end = <int32_t>self.data.size
        self.offsets.add(&end, 4)
        self.length += 1
        return 0

    def finish(self):
        """(validity bitmap or None when nothing is null, int32 offsets, data) as bytearrays."""
        return (self.valid.finish() if self.nulls else None), self.offsets.finish(), self.data.finish()


cdef class ColumnBuilder:
    """Records appended column by column: ``offset``/``timestamp`` int64, ``timestamp_type`` int32,
    ``key``/``value`` Arrow binary buffers, and (with ``headers=True``) a list of header lists."""

    cdef _Bytes _offsets
    cdef _Bytes _timestamps
    cdef _Bytes _types
    cdef _Binary _keys
    cdef _Binary _values
    cdef public list headers
    cdef public Py_ssize_t length
    cdef bint _want_headers

    def __cinit__(self, bint headers=False):
        self._offsets = _Bytes()
        self._timestamps = _Bytes()
        self._types = _Bytes()
        self._keys = _Binary()
        self._values = _Binary()
        self._want_headers = headers
        self.headers = [] if headers else None
        self.length = 0

    def add_records(self, data, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
                    int64_t base_timestamp, log_append_time, int timestamp_type, int64_t min_offset,
                    int64_t max_offset):
        """Append the records of ``data[start:end]`` with ``min_offset <= offset < max_offset``."""
        cdef Py_buffer view
        cdef const uint8_t* p
        cdef Py_ssize_t pos, record_end, kstart = 0, vstart = 0
        cdef int64_t ts_delta, offset_delta, klen, vlen, offset, ts
        cdef int64_t lat = 0
        cdef int32_t ts_type = timestamp_type
        cdef Py_ssize_t k
        cdef bint use_lat = log_append_time is not None
        if use_lat:
            lat = log_append_time
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            p = _records_range(&view, start, end, count)
            pos = start
            for k in range(count):
                _record_head(p, &pos, end, &record_end, &ts_delta, &offset_delta)
                _field(p, &pos, record_end, &kstart, &klen, "key")
                _field(p, &pos, record_end, &vstart, &vlen, "value")
                if self._want_headers:
                    headers = _headers(p, &pos, record_end)
                else:
                    _skip_headers(p, &pos, record_end)
                if pos != record_end:
                    raise _corrupt("record length does not match its contents")
                offset = base_offset + offset_delta
                if offset < min_offset or offset >= max_offset:
                    continue
                ts = lat if use_lat else base_timestamp + ts_delta
                self._offsets.add(&offset, 8)
                self._timestamps.add(&ts, 8)
                self._types.add(&ts_type, 4)
                self._keys.add(p, kstart, klen)
                self._values.add(p, vstart, vlen)
                if self._want_headers:
                    self.headers.append(headers)
                self.length += 1
            if pos != end:
                raise _corrupt(f"{end - pos} unexpected bytes after the last record")
        finally:
            PyBuffer_Release(&view)

    def finish(self):
        """``(length, offsets, timestamps, timestamp_types, key, value, headers)``: native-endian
        int64/int64/int32 buffers, ``key``/``value`` as ``(validity or None, offsets, data)``."""
        return (self.length, self._offsets.finish(), self._timestamps.finish(), self._types.finish(),
                self._keys.finish(), self._values.finish(), self.headers)


cdef int _skip_headers(const uint8_t* p, Py_ssize_t* pos, Py_ssize_t record_end) except -1:
    """Validate and step over a record's headers without building them."""
    cdef int64_t n, hkl, hvl, h
    _varint(p, pos, record_end, 5, &n)
    if n == 0:
        return 0
    if n < 0 or n * 2 > record_end - pos[0]:
        raise _corrupt(f"header count {n} out of bounds")
    for h in range(n):
        _varint(p, pos, record_end, 5, &hkl)
        if hkl < 0 or pos[0] + hkl > record_end:
            raise _corrupt(f"header key length {hkl} out of bounds")
        try:
            PyUnicode_DecodeUTF8(<const char*>p + pos[0], hkl, NULL)
        except UnicodeDecodeError:
            raise _corrupt("header key is not UTF-8") from None
        pos[0] += hkl
        _varint(p, pos, record_end, 5, &hvl)
        if hvl >= 0:
            if pos[0] + hvl > record_end:
                raise _corrupt(f"header value length {hvl} out of bounds")
            pos[0] += hvl
        elif hvl != -1:
            raise _corrupt(f"negative header value length {hvl}")
    return 0


# ------------------------------------------------------------------------------------- encoding

cdef inline Py_ssize_t _put_varint(char* dst, int64_t value):
    cdef uint64_t z = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef Py_ssize_t n = 0
    while z >= 0x80:
        dst[n] = <char>((z & 0x7F) | 0x80)
        z >>= 7
        n += 1
    dst[n] = <char>z
    return n + 1


cdef inline Py_ssize_t _varint_size(int64_t value):
    cdef uint64_t z = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef Py_ssize_t n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def encode_records(records, int64_t base_timestamp, int64_t now_ms, bytearray out):
    """Append the records section for ``records`` (``(key, value, headers, timestamp)`` tuples,
    ``timestamp`` None meaning ``now_ms``) to ``out``; returns the largest timestamp."""
    cdef int64_t max_ts = base_timestamp, ts, delta, length
    cdef Py_ssize_t i = 0, klen, vlen, hlen, size, at, body
    cdef const char* kp
    cdef const char* vp
    cdef char* dst
    cdef bytes kb, vb
    cdef list encoded_headers
    for rec in records:
        key, value, headers, timestamp = rec
        ts = now_ms if timestamp is None else timestamp
        if ts > max_ts:
            max_ts = ts
        delta = ts - base_timestamp
        if key is None:
            klen = -1
        else:
            kb = key if type(key) is bytes else bytes(key)
            klen = len(kb)
        if value is None:
            vlen = -1
        else:
            vb = value if type(value) is bytes else bytes(value)
            vlen = len(vb)
        encoded_headers = None
        hlen = 1
        if headers:
            encoded_headers = []
            hlen = _varint_size(len(headers))
            for hkey, hvalue in headers:
                hk = hkey.encode()
                hv = None if hvalue is None else (hvalue if type(hvalue) is bytes else bytes(hvalue))
                encoded_headers.append((hk, hv))
                hlen += _varint_size(len(hk)) + len(hk)
                hlen += 1 if hv is None else _varint_size(len(hv)) + len(hv)
        body = (1 + _varint_size(delta) + _varint_size(i) + _varint_size(klen) + (klen if klen > 0 else 0)
                + _varint_size(vlen) + (vlen if vlen > 0 else 0) + hlen)
        size = _varint_size(body) + body
        at = PyByteArray_GET_SIZE(out)
        if PyByteArray_Resize(out, at + size) < 0:
            raise MemoryError()
        dst = PyByteArray_AS_STRING(out) + at
        dst += _put_varint(dst, body)
        dst[0] = 0  # attributes
        dst += 1
        dst += _put_varint(dst, delta)
        dst += _put_varint(dst, i)
        dst += _put_varint(dst, klen)
        if klen > 0:
            memcpy(dst, <const char*>kb, klen)
            dst += klen
        dst += _put_varint(dst, vlen)
        if vlen > 0:
            memcpy(dst, <const char*>vb, vlen)
            dst += vlen
        if encoded_headers is None:
            dst[0] = 0
        else:
            dst += _put_varint(dst, len(encoded_headers))
            for hk, hv in encoded_headers:
                dst += _put_varint(dst, len(hk))
                memcpy(dst, <const char*>hk, len(hk))
                dst += len(hk)
                if hv is None:
                    dst += _put_varint(dst, -1)
                else:
                    dst += _put_varint(dst, len(hv))
                    memcpy(dst, <const char*>hv, len(hv))
                    dst += len(hv)
        i += 1
    return max_ts


def murmur2(data):
    """Kafka's ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c) of a bytes-like ``data``, as the
    signed 32-bit int Java returns."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    cdef const uint8_t* p = <const uint8_t*> view.buf
    cdef Py_ssize_t length = view.len
    cdef Py_ssize_t tail = length & ~3
    cdef Py_ssize_t i = 0
    cdef uint32_t m = 0x5BD1E995
    cdef uint32_t h = (<uint32_t> 0x9747B28C) ^ (<uint32_t> length)
    cdef uint32_t k
    cdef Py_ssize_t rest = length & 3
    try:
        while i < tail:
            k = (<uint32_t> p[i]) | ((<uint32_t> p[i + 1]) << 8) | ((<uint32_t> p[i + 2]) << 16) \
                | ((<uint32_t> p[i + 3]) << 24)
            k *= m
            k ^= k >> 24
            k *= m
            h *= m
            h ^= k
            i += 4
        if rest == 3:
            h ^= (<uint32_t> p[tail + 2]) << 16
        if rest >= 2:
            h ^= (<uint32_t> p[tail + 1]) << 8
        if rest >= 1:
            h ^= <uint32_t> p[tail]
            h *= m
        h ^= h >> 13
        h *= m
        h ^= h >> 15
    finally:
        PyBuffer_Release(&view)
    return <int32_t> h


def complete_deliveries(list futures, list records, row_type, topic, partition, int64_t base_offset,
                        int64_t step, int64_t log_append_time):
    """Resolve each future of a produced batch that is not done yet with
    ``row_type(topic, partition, offset, timestamp)``: offsets from ``base_offset`` in steps of
    ``step`` (0 when the broker gave none), the timestamp ``log_append_time`` unless that is -1,
    else the record's own (``records[i][3]``).  ``row_type`` is a tuple subclass (the producer's
    ``RecordMetadata``); the rows hold only a str and ints, so they are left untracked by the
    cyclic collector, as CPython does for such tuples at its first collection."""
    cdef Py_ssize_t i, n = len(futures)
    cdef int64_t offset = base_offset
    cdef PyTypeObject* kind = <PyTypeObject*>row_type
    if not isinstance(row_type, type) or not issubclass(row_type, tuple):
        raise TypeError("row_type must be a tuple subclass")
    if len(records) != n:
        raise ValueError(f"{n} futures for {len(records)} records")
    # untracking is safe only for rows without a __dict__ holding nothing but atoms
    cdef bint atoms = row_type.__dictoffset__ == 0 and PyUnicode_CheckExact(topic) and PyLong_CheckExact(partition)
    use_lat = log_append_time != -1
    lat = log_append_time
    for i in range(n):
        fut = futures[i]
        if not fut.done():
            ts = lat if use_lat else (<tuple>records[i])[3]
            row = _new_row(kind, 4)
            _set(row, 0, topic)
            _set(row, 1, partition)
            _set(row, 2, offset)
            _set(row, 3, ts)
            if atoms and PyLong_CheckExact(ts):
                PyObject_GC_UnTrack(row)
            fut.set_result(row)
        offset += step
