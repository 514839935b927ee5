"""``__transaction_state`` keys and values in Kafka's byte format (``TransactionLog``).

* key   = ``int16 key_version (0)`` + TransactionLogKey ``{transactional_id}``;
* value = ``int16 value_version`` + TransactionLogValue; ``None`` (a tombstone) removes the id.

Value version 0 for transaction-version-1 clients, 1 (flexible, with the KIP-890 tagged
fields) for transaction-version-2 clients, as Kafka writes them; every version is read.
The struct codecs are the shared ones of :mod:`protocol.schemas.misc`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from protocol.errors import ProtocolError
from protocol.schemas.misc import TransactionLogKey, TransactionLogValue

__all__ = ["TxnLogValue", "decode_txn_key", "decode_txn_value", "encode_txn_key", "encode_txn_value"]

_I16 = struct.Struct(">h")
_KEY_VERSION = 0
_MAX_VALUE_VERSION = 1


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    """One stored transaction state (see :class:`broker.coordinator.txn.coordinator.TxnMetadata`)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    next_producer_epoch: int
    timeout_ms: int
    status: int
    partitions: tuple[tuple[str, int], ...]
    last_update_ms: int
    start_ms: int
    client_version: int


def encode_txn_key(transactional_id: str) -> bytes:
    return _I16.pack(_KEY_VERSION) + TransactionLogKey.encode(0, {"transactional_id": transactional_id})


def decode_txn_key(key: bytes) -> str:
    if len(key) < 2:
        raise ProtocolError("__transaction_state key shorter than its version")
    (version,) = _I16.unpack_from(key)
    if version != _KEY_VERSION:
        raise ProtocolError(f"unknown __transaction_state key version {version}")
    return str(TransactionLogKey.decode(0, key, 2)["transactional_id"])


def encode_txn_value(v: TxnLogValue) -> bytes:
    version = 1 if v.client_version >= 2 else 0
    by_topic: dict[str, list[int]] = {}
    for topic, partition in v.partitions:
        by_topic.setdefault(topic, []).append(partition)
    body: dict[str, Any] = {
        "producer_id": v.producer_id, "previous_producer_id": v.previous_producer_id,
        "next_producer_id": v.next_producer_id, "producer_epoch": v.producer_epoch,
        "next_producer_epoch": v.next_producer_epoch, "transaction_timeout_ms": v.timeout_ms,
        "transaction_status": v.status,
        "transaction_partitions": [{"topic": t, "partition_ids": sorted(ps)} for t, ps in sorted(by_topic.items())],
        "transaction_last_update_timestamp_ms": v.last_update_ms, "transaction_start_timestamp_ms": v.start_ms,
        "client_transaction_version": v.client_version,
    }
    return _I16.pack(version) + TransactionLogValue.encode(version, body)


def decode_txn_value(value: bytes) -> TxnLogValue:
    if len(value) < 2:
        raise ProtocolError("__transaction_state value shorter than its version")
    (version,) = _I16.unpack_from(value)
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise ProtocolError(f"unknown __transaction_state value version {version}")
    d = TransactionLogValue.decode(version, value, 2)
    partitions = tuple((str(t["topic"]), int(p)) for t in d["transaction_partitions"] or ()
                       for p in t["partition_ids"])
    return TxnLogValue(d["producer_id"], d["previous_producer_id"], d["next_producer_id"], d["producer_epoch"],
                       d["next_producer_epoch"], d["transaction_timeout_ms"], d["transaction_status"], partitions,
                       d["transaction_last_update_timestamp_ms"], d["transaction_start_timestamp_ms"],
                       d["client_transaction_version"])
