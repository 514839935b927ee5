"""Test helpers for code built on ``broker.log``: a fake clock, batch builders, a one-call log opener.

Not used by the broker itself."""

from __future__ import annotations

import os
import uuid
from typing import Any

from broker.log import LogConfig, LogManager, PartitionLog
from broker.log.partition_log import AppendResult, RecoveryReport
from protocol.records import encode_batch


class FakeClock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def make_batch(n: int = 1, ts: int = 1_700_000_000_000, value: bytes = b"value", key: bytes | None = b"key",
               **kw: object) -> bytes:
    return encode_batch([(key, value + b"-%d" % i, None, ts + i) for i in range(n)], **kw)  # type: ignore[arg-type]


class SoleReplicaLog(PartitionLog):
    """A log that is its partition's only in-sync replica: the high watermark follows the log end,
    as the broker's replication layer moves it for a leader whose ISR is itself."""

    def _open(self) -> RecoveryReport:
        report = super()._open()
        self.high_watermark = self.log_end_offset
        return report

    def append(self, batch: bytes | bytearray | memoryview, **kwargs: Any) -> AppendResult:
        result = super().append(batch, **kwargs)
        self.high_watermark = self.log_end_offset
        return result

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> AppendResult:
        result = super().append_marker(producer_id, producer_epoch, commit, coordinator_epoch)
        self.high_watermark = self.log_end_offset
        return result


def open_log(path: str | os.PathLike[str], clock: FakeClock, **configs: str) -> PartitionLog:
    overrides = {k.replace("_", "."): v for k, v in configs.items()}
    return SoleReplicaLog(os.path.join(path, "t-0"), "t", 0, LogConfig.from_dict(overrides), clock)


def open_manager(path: str | os.PathLike[str], clock: FakeClock | None = None, **kwargs: object) -> LogManager:
    """A LogManager whose logs are their partitions' only in-sync replicas (see SoleReplicaLog)."""
    return LogManager(path, clock, log_class=SoleReplicaLog, **kwargs)  # type: ignore[arg-type]


def create_logs(lm: LogManager, topic: str, partitions: int = 1, configs: dict[str, str] | None = None
                ) -> uuid.UUID:
    """Host ``partitions`` logs of a new topic in ``lm`` (what the replica manager does for its replicas)."""
    topic_id = uuid.uuid4()
    for p in range(partitions):
        lm.ensure_log(topic, p, topic_id, configs or {})
    return topic_id


def delete_logs(lm: LogManager, topic: str) -> None:
    """Remove every hosted log of ``topic`` (what the replica manager does when it is deleted)."""
    for t, p in list(lm.hosted()):
        if t == topic:
            lm.delete_log(t, p)
