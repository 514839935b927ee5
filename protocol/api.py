"""API registry, request/response headers and frames.

One table maps every API key we speak to its request and response
:class:`~protocol.schema.Message`.  The functions here add and strip the
4-byte size prefix and the headers, applying Kafka's header-version rules:

* request header v2 when the request version is flexible, else v1;
* response header v1 when the response version is flexible, else v0 —
  except ApiVersions, whose response header is always v0 (KIP-511).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from protocol.errors import ProtocolError, UnsupportedVersionError
from protocol.primitives import ExternalBytes, Obj, Writer
from protocol.schema import Message
from protocol.schemas import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_partition_reassignments,
    alter_share_group_offsets,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_share_group_state,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_share_group_offsets,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    initialize_share_group_state,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    read_share_group_state,
    read_share_group_state_summary,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    sync_group,
    txn_offset_commit,
    write_share_group_state,
    write_txn_markers,
)
from protocol.schemas.misc import RequestHeader, ResponseHeader

_i32 = struct.Struct(">i")
_i16 = struct.Struct(">h")
_hdr_prefix = struct.Struct(">hhi")
_response_prefix = struct.Struct(">ii")


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


@dataclass(frozen=True)
class Api:
    key: ApiKey
    name: str
    request: Message
    response: Message

    @property
    def min_version(self) -> int:
        return self.request.min_version

    @property
    def max_version(self) -> int:
        return self.request.max_version


def _api(key: ApiKey, module: Any) -> Api:
    messages = [v for v in vars(module).values() if isinstance(v, Message)]
    request = next(m for m in messages if m.name.endswith("Request"))
    response = next(m for m in messages if m.name.endswith("Response"))
    return Api(key, request.name[: -len("Request")], request, response)


APIS: dict[int, Api] = {
    a.key: a
    for a in (
        _api(ApiKey.PRODUCE, produce),
        _api(ApiKey.FETCH, fetch),
        _api(ApiKey.LIST_OFFSETS, list_offsets),
        _api(ApiKey.METADATA, metadata),
        _api(ApiKey.OFFSET_COMMIT, offset_commit),
        _api(ApiKey.OFFSET_FETCH, offset_fetch),
        _api(ApiKey.FIND_COORDINATOR, find_coordinator),
        _api(ApiKey.JOIN_GROUP, join_group),
        _api(ApiKey.HEARTBEAT, heartbeat),
        _api(ApiKey.LEAVE_GROUP, leave_group),
        _api(ApiKey.SYNC_GROUP, sync_group),
        _api(ApiKey.DESCRIBE_GROUPS, describe_groups),
        _api(ApiKey.LIST_GROUPS, list_groups),
        _api(ApiKey.SASL_HANDSHAKE, sasl_handshake),
        _api(ApiKey.API_VERSIONS, api_versions),
        _api(ApiKey.CREATE_TOPICS, create_topics),
        _api(ApiKey.DELETE_TOPICS, delete_topics),
        _api(ApiKey.DELETE_RECORDS, delete_records),
        _api(ApiKey.INIT_PRODUCER_ID, init_producer_id),
        _api(ApiKey.DESCRIBE_CONFIGS, describe_configs),
        _api(ApiKey.SASL_AUTHENTICATE, sasl_authenticate),
        _api(ApiKey.CREATE_PARTITIONS, create_partitions),
        _api(ApiKey.DELETE_GROUPS, delete_groups),
        _api(ApiKey.OFFSET_DELETE, offset_delete),
        _api(ApiKey.ALTER_PARTITION_REASSIGNMENTS, alter_partition_reassignments),
        _api(ApiKey.LIST_PARTITION_REASSIGNMENTS, list_partition_reassignments),
        _api(ApiKey.DESCRIBE_CLUSTER, describe_cluster),
        _api(ApiKey.CONSUMER_GROUP_HEARTBEAT, consumer_group_heartbeat),
        _api(ApiKey.CONSUMER_GROUP_DESCRIBE, consumer_group_describe),
        _api(ApiKey.OFFSET_FOR_LEADER_EPOCH, offset_for_leader_epoch),
        _api(ApiKey.ADD_PARTITIONS_TO_TXN, add_partitions_to_txn),
        _api(ApiKey.ADD_OFFSETS_TO_TXN, add_offsets_to_txn),
        _api(ApiKey.END_TXN, end_txn),
        _api(ApiKey.WRITE_TXN_MARKERS, write_txn_markers),
        _api(ApiKey.TXN_OFFSET_COMMIT, txn_offset_commit),
        _api(ApiKey.DESCRIBE_ACLS, describe_acls),
        _api(ApiKey.CREATE_ACLS, create_acls),
        _api(ApiKey.DELETE_ACLS, delete_acls),
        _api(ApiKey.ALTER_CONFIGS, alter_configs),
        _api(ApiKey.DESCRIBE_LOG_DIRS, describe_log_dirs),
        _api(ApiKey.ELECT_LEADERS, elect_leaders),
        _api(ApiKey.INCREMENTAL_ALTER_CONFIGS, incremental_alter_configs),
        _api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_user_scram_credentials),
        _api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, alter_user_scram_credentials),
        _api(ApiKey.DESCRIBE_PRODUCERS, describe_producers),
        _api(ApiKey.DESCRIBE_TRANSACTIONS, describe_transactions),
        _api(ApiKey.LIST_TRANSACTIONS, list_transactions),
        _api(ApiKey.SHARE_GROUP_HEARTBEAT, share_group_heartbeat),
        _api(ApiKey.SHARE_GROUP_DESCRIBE, share_group_describe),
        _api(ApiKey.SHARE_FETCH, share_fetch),
        _api(ApiKey.SHARE_ACKNOWLEDGE, share_acknowledge),
        _api(ApiKey.INITIALIZE_SHARE_GROUP_STATE, initialize_share_group_state),
        _api(ApiKey.READ_SHARE_GROUP_STATE, read_share_group_state),
        _api(ApiKey.WRITE_SHARE_GROUP_STATE, write_share_group_state),
        _api(ApiKey.DELETE_SHARE_GROUP_STATE, delete_share_group_state),
        _api(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, read_share_group_state_summary),
        _api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, describe_share_group_offsets),
        _api(ApiKey.ALTER_SHARE_GROUP_OFFSETS, alter_share_group_offsets),
        _api(ApiKey.DELETE_SHARE_GROUP_OFFSETS, delete_share_group_offsets),
    )
}


def api_name(api_key: int) -> str:
    api = APIS.get(api_key)
    return api.name if api else f"Unknown{api_key}"


def request_header_version(api_key: int, api_version: int) -> int:
    api = APIS.get(api_key)
    return 2 if api is not None and api.request.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    api = APIS.get(api_key)
    return 1 if api is not None and api.response.is_flexible(api_version) else 0


# ---------------------------------------------------------------------------
# server side: request frames in, response frames out
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class RequestHeaderData:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


def peek_header(frame: Any) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a frame body."""
    if len(frame) < 8:
        raise ProtocolError("request shorter than a header")
    return _hdr_prefix.unpack_from(frame, 0)


def decode_request_header(frame: Any) -> RequestHeaderData:
    """Parse the request header of a frame (without its size prefix).

    Works for unknown API keys and versions too, so the caller can still
    answer with UNSUPPORTED_VERSION using the correlation id.
    """
    api_key, api_version, correlation_id = peek_header(frame)
    flexible = _request_flexible.get((api_key, api_version))
    if flexible is None:
        flexible = _request_flexible[(api_key, api_version)] = request_header_version(api_key, api_version) == 2
    return _header_after_prefix(frame, api_key, api_version, correlation_id, flexible)


def _header_after_prefix(frame: Any, api_key: int, api_version: int, correlation_id: int,
                         flexible: bool) -> RequestHeaderData:
    # The common case inline: a client id, and (flexible versions) no tagged header fields.
    size = len(frame)
    if size >= 10:
        (n,) = _i16.unpack_from(frame, 8)
        client_id: str | None = None
        pos = 10 + max(n, 0)
        ok = n == -1 or (n >= 0 and pos <= size)
        if ok and n > 0:
            try:
                client_id = str(frame[10:pos], "utf-8")
            except UnicodeDecodeError:
                ok = False  # the general decoder reports it
        elif n == 0:
            client_id = ""
        if ok and (not flexible or (pos < size and frame[pos] == 0)):
            return RequestHeaderData(api_key, api_version, correlation_id, client_id, pos + flexible)
    obj, pos = RequestHeader.decode_from(2 if flexible else 1, frame, 0)
    return RequestHeaderData(api_key, api_version, obj["correlation_id"], obj["client_id"], pos)


_request_flexible: dict[tuple[int, int], bool] = {}


def decode_request_body(header: RequestHeaderData, frame: Any) -> Obj:
    api = APIS.get(header.api_key)
    if api is None or not api.min_version <= header.api_version <= api.max_version:
        raise UnsupportedVersionError(header.api_key, header.api_version)
    return api.request.decode(header.api_version, frame, header.body_offset)


class ServerCodec:
    """One served (API, version), resolved once: the request header and body in, the response
    frame out — :func:`decode_request_header`, :func:`decode_request_body` and
    :func:`encode_response_frame` without their per-request lookups (the server's hot path)."""

    __slots__ = (
        "_flexible_header",
        "_request",
        "_response",
        "_response_flexible",
        "api",
        "name",
        "version",
    )

    def __init__(self, api: Api, version: int) -> None:
        api.request.check_version(version)
        self.api = api
        self.name = api.name
        self.version = version
        self._flexible_header = request_header_version(api.key, version) == 2
        self._request = api.request
        self._response = api.response
        self._response_flexible = response_header_version(api.key, version) == 1

    def header(self, frame: Any, correlation_id: int) -> RequestHeaderData:
        """The request header (its API key, version and correlation id already peeked)."""
        return _header_after_prefix(frame, self.api.key, self.version, correlation_id, self._flexible_header)

    def decode(self, frame: Any, pos: int) -> Obj:
        """The request body starting at ``pos``; :class:`ProtocolError` when malformed."""
        return self._request.decode_from(self.version, frame, pos)[0]

    def encode_response(self, correlation_id: int, body: Any) -> Writer:
        """The response frame (size prefix, header, body), as :func:`encode_response_frame`."""
        out = Writer()
        out += _response_prefix.pack(0, correlation_id)
        if self._response_flexible:
            out.append(0)
        self._response.encode_into(self.version, body, out)
        splices = out.splices
        _i32.pack_into(out, 0, len(out) - 4 + (sum(ext.size for _, ext in splices) if splices else 0))
        return out


def server_codec(api_key: int, api_version: int) -> ServerCodec | None:
    """The :class:`ServerCodec` of a served API key and version; None for anything else."""
    codec = _server_codecs.get((api_key, api_version))
    if codec is None:
        api = APIS.get(api_key)
        if api is None or not api.min_version <= api_version <= api.max_version:
            return None
        codec = _server_codecs[(api_key, api_version)] = ServerCodec(api, api_version)
    return codec


_server_codecs: dict[tuple[int, int], ServerCodec] = {}


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A complete response frame (size prefix, header, body) as bytes."""
    parts = encode_response_parts(api_key, api_version, correlation_id, body)
    if len(parts) != 1:
        raise ProtocolError("response holds external bytes; use encode_response_parts")
    return bytes(parts[0])  # type: ignore[arg-type]


def encode_response_parts(api_key: int, api_version: int, correlation_id: int,
                          body: Any) -> list[bytearray | memoryview | ExternalBytes]:
    """A response frame as chunks: the encoded bytes (not copied again: a ``bytearray``, or
    ``memoryview`` pieces of it), with :class:`ExternalBytes` where record data goes."""
    return response_parts(encode_response_frame(api_key, api_version, correlation_id, body))


def encode_response_frame(api_key: int, api_version: int, correlation_id: int, body: Any) -> Writer:
    """A response frame (size prefix, header, body) in a :class:`Writer`: its ``splices`` say where
    external bytes go, its ``errors`` the non-zero error codes encoded."""
    codec = server_codec(api_key, api_version)
    if codec is None:
        raise UnsupportedVersionError(api_key, api_version)
    return codec.encode_response(correlation_id, body)


def response_parts(out: Writer) -> list[bytearray | memoryview | ExternalBytes]:
    """An encoded frame as the chunks to send: itself, or pieces of it around its external bytes."""
    splices = out.splices
    if not splices:
        return [out]
    view = memoryview(out)
    parts: list[bytearray | memoryview | ExternalBytes] = []
    start = 0
    for pos, ext in splices:
        parts.append(view[start:pos])
        parts.append(ext)
        start = pos
    parts.append(view[start:])
    return parts


# ---------------------------------------------------------------------------
# client side: request frames out, response frames in
# ---------------------------------------------------------------------------


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body: Any) -> bytes:
    """A complete request frame (size prefix, header, body)."""
    api = APIS.get(api_key)
    if api is None:
        raise UnsupportedVersionError(api_key, api_version)
    out = Writer()
    out += b"\0\0\0\0"
    header = {"request_api_key": api_key, "request_api_version": api_version,
              "correlation_id": correlation_id, "client_id": client_id}
    RequestHeader.encode_into(request_header_version(api_key, api_version), header, out)
    api.request.encode_into(api_version, body, out)
    _i32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_response(api_key: int, api_version: int, frame: Any) -> tuple[int, Obj]:
    """(correlation_id, body) from a response frame without its size prefix."""
    header, pos = ResponseHeader.decode_from(response_header_version(api_key, api_version), frame, 0)
    return header["correlation_id"], APIS[api_key].response.decode(api_version, frame, pos)


def response_correlation_id(frame: Any) -> int:
    if len(frame) < 4:
        raise ProtocolError("response shorter than a header")
    return _i32.unpack_from(frame, 0)[0]
