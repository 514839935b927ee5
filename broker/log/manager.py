"""The data directory: topics, their partition logs, periodic maintenance, the directory lock.

``LogManager`` owns ``data_dir``::

    data_dir/
      .lock                      fcntl.flock'ed while a broker has the directory open
      __topics/<topic>.json      topic metadata: name, topic_id (UUID), partitions, config overrides
      <topic>-<partition>/       one PartitionLog each (see partition_log)

A topic exists iff its JSON file exists: creation writes the partition
directories first and the JSON last; deletion removes the JSON first.  Partition
directories without a topic (left by a crash in between) are removed on open.

It also owns what is per-directory rather than per-partition: the
``LogDirFailureChannel`` every partition log reports I/O failures to (one
failed fsync takes the whole directory offline, see ``dir_failure``), the
``LogCleaner`` that compacts logs on its worker thread, and the set of logs
with unflushed data, so a flush round costs the dirty logs, not all of them.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field

from broker.log._fs import atomic_write, fsync_dir
from broker.log.cleaner import LogCleaner
from broker.log.config import TOPIC_CONFIG_DEFAULTS, LogConfig, validate_topic_configs
from broker.log.dir_failure import LogDirFailure, LogDirFailureChannel
from broker.log.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaStorageError,
    LogDirLockedError,
    LogError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from broker.log.partition_log import Clock, PartitionLog, RecoveryReport, wall_clock_ms

logger = logging.getLogger("kbroker.log")

TOPICS_DIR = "__topics"
LOCK_FILE = ".lock"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: 1-249 chars of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not name or name in (".", ".."):
        raise InvalidTopicError(f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC.match(name):
        raise InvalidTopicError(f"topic name {name!r} contains characters other than [a-zA-Z0-9._-]")


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # overrides only

    def to_json(self) -> bytes:
        return json.dumps({"version": 1, "name": self.name, "topic_id": str(self.topic_id),
                           "partitions": self.partitions, "configs": self.configs},
                          indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> TopicInfo:
        d = json.loads(data)
        return cls(str(d["name"]), uuid.UUID(d["topic_id"]), int(d["partitions"]),
                   {str(k): str(v) for k, v in d.get("configs", {}).items()})


class LogManager:
    """All partition logs under one data directory.  Single-threaded like ``PartitionLog``."""

    def __init__(self, data_dir: str | os.PathLike[str], clock: Clock | None = None,
                 default_configs: Mapping[str, str] | None = None, *,
                 cleaner_executor: Executor | None = None) -> None:
        """``cleaner_executor``: where compaction passes run (default: one worker thread)."""
        self.data_dir = os.fspath(data_dir)
        self.clock: Clock = clock or wall_clock_ms
        self.dir_failure = LogDirFailureChannel(self.data_dir)
        self.cleaner = LogCleaner(self.clock, executor=cleaner_executor)
        self._dirty_logs: dict[PartitionLog, None] = {}  # insertion-ordered set
        #: Broker-level defaults (``log.*`` equivalents) layered over TOPIC_CONFIG_DEFAULTS.
        self.default_configs = validate_topic_configs(default_configs or {})
        os.makedirs(os.path.join(self.data_dir, TOPICS_DIR), exist_ok=True)
        self._lock_fd = self._lock()
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self.recovery_reports: dict[tuple[str, int], RecoveryReport] = {}
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ open
    def _lock(self) -> int:
        fd = os.open(os.path.join(self.data_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogDirLockedError(f"{self.data_dir} is in use by another broker process") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def _load(self) -> None:
        tdir = os.path.join(self.data_dir, TOPICS_DIR)
        for fname in sorted(os.listdir(tdir)):
            path = os.path.join(tdir, fname)
            if fname.endswith(".tmp"):
                os.unlink(path)
                continue
            if not fname.endswith(".json"):
                continue
            try:
                with open(path, "rb") as f:
                    info = TopicInfo.from_json(f.read())
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise KafkaStorageError(f"unreadable topic metadata {path}: {e}") from e
            self._topics[info.name] = info
            self._by_id[info.topic_id] = info.name
        for name in os.listdir(self.data_dir):
            m = _PARTITION_DIR.match(name)
            path = os.path.join(self.data_dir, name)
            if name.endswith(".delete") and os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
                continue
            if not m or not os.path.isdir(path):
                continue
            info = self._topics.get(m.group(1))
            if info is None or int(m.group(2)) >= info.partitions:
                logger.warning("removing orphan partition directory %s (no such topic partition)", path)
                shutil.rmtree(path, ignore_errors=True)
        for info in self._topics.values():
            for p in range(info.partitions):
                self._open_log(info, p)

    def _log_config(self, info: TopicInfo) -> LogConfig:
        return LogConfig.from_dict(info.configs, self._defaults())

    def _defaults(self) -> dict[str, str]:
        return {**TOPIC_CONFIG_DEFAULTS, **self.default_configs}

    def _open_log(self, info: TopicInfo, partition: int) -> PartitionLog:
        log = PartitionLog(self.partition_dir(info.name, partition), info.name, partition,
                           self._log_config(info), self.clock, dir_failure=self.dir_failure,
                           on_dirty=self._note_dirty)
        self._logs[(info.name, partition)] = log
        if log.dirty:
            self._note_dirty(log)
        self.recovery_reports[(info.name, partition)] = log.recovery_report
        return log

    def partition_dir(self, topic: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{topic}-{partition}")

    def _write_meta(self, info: TopicInfo) -> None:
        atomic_write(os.path.join(self.data_dir, TOPICS_DIR, f"{info.name}.json"), info.to_json())

    # ---------------------------------------------------------------- topics
    def validate_new_topic(self, name: str, partitions: int, configs: Mapping[str, str | None] | None = None
                           ) -> dict[str, str]:
        """All CreateTopics checks without side effects; returns the normalised overrides."""
        validate_topic_name(name)
        if name in self._topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        if partitions < 1:
            raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
        overrides = validate_topic_configs(configs or {})
        LogConfig.from_dict(overrides, self._defaults())
        return overrides

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str | None] | None = None,
                     topic_id: uuid.UUID | None = None) -> uuid.UUID:
        """Create the topic's partition logs and metadata; return its topic id."""
        overrides = self.validate_new_topic(name, partitions, configs)
        info = TopicInfo(name, topic_id or uuid.uuid4(), partitions, overrides)
        for p in range(partitions):
            path = self.partition_dir(name, p)
            if os.path.exists(path):
                shutil.rmtree(path)
            self._open_log(info, p)
        fsync_dir(self.data_dir)
        self._write_meta(info)
        self._topics[name] = info
        self._by_id[info.topic_id] = name
        logger.info("created topic %s (%s) with %d partitions", name, info.topic_id, partitions)
        return info.topic_id

    def delete_topic(self, name: str) -> None:
        info = self._require(name)
        os.unlink(os.path.join(self.data_dir, TOPICS_DIR, f"{name}.json"))
        fsync_dir(os.path.join(self.data_dir, TOPICS_DIR))
        del self._topics[name]
        self._by_id.pop(info.topic_id, None)
        for p in range(info.partitions):
            log = self._logs.pop((name, p), None)
            self.recovery_reports.pop((name, p), None)
            if log is not None:
                log.delete()
            path = self.partition_dir(name, p)
            if os.path.exists(path):
                doomed = f"{path}.{info.topic_id.hex}.delete"
                os.rename(path, doomed)
                shutil.rmtree(doomed, ignore_errors=True)
        logger.info("deleted topic %s (%s)", name, info.topic_id)

    def add_partitions(self, name: str, total: int) -> None:
        """CreatePartitions: grow the topic to ``total`` partitions."""
        info = self._require(name)
        if total <= info.partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} has {info.partitions} partitions; new count {total} must be larger")
        for p in range(info.partitions, total):
            path = self.partition_dir(name, p)
            if os.path.exists(path):
                shutil.rmtree(path)
            self._open_log(info, p)
        info.partitions = total
        self._write_meta(info)

    def alter_topic_configs(self, name: str, configs: Mapping[str, str | None], *,
                            incremental: bool = True) -> None:
        """Set (``None`` = delete) overrides; ``incremental=False`` replaces them all (AlterConfigs)."""
        info = self._require(name)
        merged = dict(info.configs) if incremental else {}
        for k, v in configs.items():
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = v
        overrides = validate_topic_configs(merged)
        config = LogConfig.from_dict(overrides, self._defaults())
        info.configs = overrides
        self._write_meta(info)
        for p in range(info.partitions):
            self._logs[(name, p)].config = config

    def topic_configs(self, name: str) -> dict[str, tuple[str, bool]]:
        """Effective configs: name -> (value, is_default) for DescribeConfigs."""
        info = self._require(name)
        defaults = self._defaults()
        return {k: (info.configs.get(k, v), k not in info.configs) for k, v in sorted(defaults.items())}

    def _require(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
        return info

    def get_topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def list_topics(self) -> list[TopicInfo]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def topic_id(self, name: str) -> uuid.UUID | None:
        info = self._topics.get(name)
        return info.topic_id if info else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    # Aliases used by the request handlers.
    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def topic_name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def validate_configs(self, configs: Mapping[str, str | None]) -> dict[str, str]:
        """Validate topic config overrides (INVALID_CONFIG on error); return them normalised."""
        overrides = validate_topic_configs(configs)
        LogConfig.from_dict(overrides, self._defaults())
        return overrides

    def get_log(self, topic: str, partition: int) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")
        return log

    def logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def is_open(self, log: PartitionLog) -> bool:
        """True while ``log`` is one of this manager's logs (not closed, its topic not deleted)."""
        return self._logs.get((log.topic, log.partition)) is log

    # ------------------------------------------------------ directory failure
    @property
    def offline(self) -> bool:
        """True once an I/O failure took the data directory offline (for the life of the process)."""
        return self.dir_failure.offline

    @property
    def failure(self) -> LogDirFailure | None:
        return self.dir_failure.failure

    def mark_offline(self, operation: str, path: str, exc: OSError) -> KafkaStorageError:
        """Report an I/O failure of the data directory (see ``LogDirFailureChannel.report``)."""
        return self.dir_failure.report(operation, path, exc)

    # ----------------------------------------------------------- maintenance
    def _note_dirty(self, log: PartitionLog) -> None:
        self._dirty_logs[log] = None

    def logs_due_for_flush(self, now_ms: int) -> list[PartitionLog]:
        """Logs whose ``flush.ms`` has passed with unflushed data.  Looks only at logs that
        received data since their last complete flush (and forgets those that are clean now)."""
        if self.offline:
            return []
        due = []
        for log in list(self._dirty_logs):
            if not self.is_open(log) or not log.dirty:
                del self._dirty_logs[log]
            elif log.flush_due(now_ms):
                due.append(log)
        return due

    def maintenance(self, now_ms: int | None = None, *, flush: bool = True) -> None:
        """Roll by age, retention, ``flush.ms`` flushes (unless ``flush=False``: the caller flushes
        off its thread), and compaction (planned here, cleaned on the cleaner's worker) — for every
        partition.  Nothing once the directory is offline."""
        if self.offline:
            return
        now = self.clock() if now_ms is None else now_ms
        self.cleaner.apply_completed()
        for log in list(self._logs.values()):
            try:
                log.maintenance(now, flush=flush)
                if log.config.compact:
                    self.cleaner.request(log)
            except KafkaStorageError:
                return  # the directory went offline: nothing more to do
            except OSError:
                logger.exception("maintenance of %s failed", log.name)

    def apply_cleaned(self) -> int:
        """Swap in the compaction passes the cleaner finished (call on the owner thread)."""
        return self.cleaner.apply_completed()

    def flush_all(self) -> None:
        """fsync every log (shutdown); stops at the first failure, which takes the directory offline."""
        if self.offline:
            return
        for log in self._logs.values():
            try:
                log.flush()
            except KafkaStorageError:
                return

    def close(self) -> None:
        """Stop the cleaner, close every log (flushing them unless the directory is offline), unlock."""
        self.cleaner.close()
        for log in self._logs.values():
            try:
                log.close()
            except (OSError, LogError):
                logger.exception("closing %s failed", log.name)
        self._logs.clear()
        self._dirty_logs.clear()
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
