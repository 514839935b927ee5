"""The data directory: the partition logs this broker hosts, their maintenance, the directory lock.

``LogManager`` owns ``data_dir``::

    data_dir/
      .lock                      fcntl.flock'ed while a broker has the directory open
      <topic>-<partition>/       one PartitionLog each (see partition_log), with
        partition.metadata       {"version": 0, "topic_id": "..."}: which topic the log belongs to
      __metadata/                the single broker's metadata store (see broker.cluster.local_kv)
      __topics/<topic>.json      written by earlier versions; read once to migrate (legacy_topics)

Which topics exist, their partitions and configs, is cluster metadata (the
metadata store), not the data directory's: the replica manager asks for the
logs of the partitions assigned to this broker (:meth:`LogManager.ensure_log`)
and removes the others.  A partition directory whose topic id differs from the
current topic of that name is a leftover of a deleted topic.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field

from broker.log._fs import atomic_write, fsync_dir
from broker.log.cleaner import CleanerSettings, LogCleaner
from broker.log.config import TOPIC_CONFIG_DEFAULTS, LogConfig, validate_topic_configs
from broker.log.dir_failure import LogDirFailure, LogDirFailureChannel
from broker.log.errors import (
    InvalidTopicError,
    KafkaStorageError,
    LogDirLockedError,
    LogError,
    UnknownTopicOrPartitionError,
)
from broker.log.partition_log import Clock, PartitionLog, RecoveryReport, wall_clock_ms
from broker.log.reaper import FileReaper

logger = logging.getLogger("kbroker.log")

TOPICS_DIR = "__topics"
LOCK_FILE = ".lock"
PARTITION_METADATA = "partition.metadata"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")

TopicPartition = tuple[str, int]


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
    """A topic as earlier versions recorded it in ``__topics/<name>.json`` (read for migration)."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # overrides only

    @classmethod
    def from_json(cls, data: bytes) -> TopicInfo:
        d = json.loads(data)
        return cls(str(d["name"]), uuid.UUID(d["topic_id"]), int(d["partitions"]),
                   {str(k): str(v) for k, v in d.get("configs", {}).items()})


class LogManager:
    """The partition logs under one data directory.  Single-threaded like ``PartitionLog``."""

    def __init__(self, data_dir: str | os.PathLike[str], clock: Clock | None = None,
                 default_configs: Mapping[str, str] | None = None, *,
                 cleaner_executor: Executor | None = None, cleaner_settings: CleanerSettings | None = None,
                 log_class: type[PartitionLog] = PartitionLog) -> None:
        """``cleaner_executor``: where compaction passes run (default: one worker thread);
        ``cleaner_settings``: the broker-level ``log.cleaner.*`` settings;
        ``log_class``: the partition log type (tests use logs whose high watermark follows the end)."""
        self._log_class = log_class
        self.data_dir = os.fspath(data_dir)
        self.clock: Clock = clock or wall_clock_ms
        self.dir_failure = LogDirFailureChannel(self.data_dir)
        #: closes removed segments' files off the owner's thread
        self.reaper = FileReaper()
        self.cleaner = LogCleaner(self.clock, settings=cleaner_settings, executor=cleaner_executor,
                                  on_swapped=self._note_retiring)
        self._dirty_logs: dict[PartitionLog, None] = {}  # insertion-ordered set
        self._retiring: dict[PartitionLog, None] = {}  # logs holding segments a compaction swap retired
        #: Broker-level defaults (``log.*`` equivalents) layered over TOPIC_CONFIG_DEFAULTS.
        self.default_configs = validate_topic_configs(default_configs or {})
        os.makedirs(self.data_dir, exist_ok=True)
        self._lock_fd = self._lock()
        self._legacy: dict[str, TopicInfo] = {}
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._topic_ids: dict[TopicPartition, uuid.UUID] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self.recovery_reports: dict[TopicPartition, RecoveryReport] = {}
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
        if os.path.isdir(tdir):
            for fname in sorted(os.listdir(tdir)):
                if not fname.endswith(".json"):
                    continue
                path = os.path.join(tdir, fname)
                try:
                    with open(path, "rb") as f:
                        info = TopicInfo.from_json(f.read())
                except (OSError, ValueError, KeyError, TypeError) as e:
                    raise KafkaStorageError(f"unreadable topic metadata {path}: {e}") from e
                self._legacy[info.name] = info
        for name in sorted(os.listdir(self.data_dir)):
            m = _PARTITION_DIR.match(name)
            path = os.path.join(self.data_dir, name)
            if (name.endswith(".delete") or name.endswith("-stray")) and os.path.isdir(path):
                if name.endswith(".delete"):
                    shutil.rmtree(path, ignore_errors=True)
                continue
            if not m or not os.path.isdir(path):
                continue
            topic, partition = m.group(1), int(m.group(2))
            topic_id = self._read_partition_metadata(path)
            legacy = self._legacy.get(topic)
            if topic_id is None and legacy is not None and partition < legacy.partitions:
                topic_id = legacy.topic_id
                self._write_partition_metadata(path, topic_id)
            if topic_id is None:
                logger.warning("removing partition directory %s: it belongs to no known topic", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            configs = legacy.configs if legacy is not None else {}
            self._open_log(topic, partition, topic_id, configs)

    @staticmethod
    def _read_partition_metadata(path: str) -> uuid.UUID | None:
        try:
            with open(os.path.join(path, PARTITION_METADATA), "rb") as f:
                return uuid.UUID(json.load(f)["topic_id"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            logger.warning("%s: unreadable %s", path, PARTITION_METADATA)
            return None

    @staticmethod
    def _write_partition_metadata(path: str, topic_id: uuid.UUID) -> None:
        atomic_write(os.path.join(path, PARTITION_METADATA),
                     json.dumps({"version": 0, "topic_id": str(topic_id)}).encode())

    def _defaults(self) -> dict[str, str]:
        return {**TOPIC_CONFIG_DEFAULTS, **self.default_configs}

    def log_config(self, overrides: Mapping[str, str]) -> LogConfig:
        return LogConfig.from_dict(dict(overrides), self._defaults())

    def _open_log(self, topic: str, partition: int, topic_id: uuid.UUID, configs: Mapping[str, str]) -> PartitionLog:
        log = self._log_class(self.partition_dir(topic, partition), topic, partition, self.log_config(configs),
                              self.clock, dir_failure=self.dir_failure, on_dirty=self._note_dirty,
                              reaper=self.reaper)
        if log.dirty:
            self._note_dirty(log)
        self._logs[(topic, partition)] = log
        self._topic_ids[(topic, partition)] = topic_id
        self.recovery_reports[(topic, partition)] = log.recovery_report
        return log

    def partition_dir(self, topic: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{topic}-{partition}")

    # -------------------------------------------------------- hosted logs
    def legacy_topics(self) -> list[TopicInfo]:
        """Topics recorded in ``__topics/`` by earlier versions (to import into the metadata store)."""
        return sorted(self._legacy.values(), key=lambda t: t.name)

    def retire_legacy_topics(self) -> None:
        """The legacy topic files were imported: keep them aside, out of the way of the next start."""
        tdir = os.path.join(self.data_dir, TOPICS_DIR)
        if os.path.isdir(tdir):
            os.replace(tdir, tdir + ".migrated")
            fsync_dir(self.data_dir)
        self._legacy = {}

    def ensure_log(self, topic: str, partition: int, topic_id: uuid.UUID,
                   configs: Mapping[str, str] | None = None) -> PartitionLog:
        """The log of a partition this broker hosts, created if needed.

        A log left by an earlier topic of the same name (another topic id) is deleted first.
        """
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            if self._topic_ids.get(key) == topic_id:
                if configs is not None:
                    self.set_topic_configs(topic, configs)
                return log
            logger.info("%s-%d belongs to an earlier topic %s: deleting it", topic, partition,
                        self._topic_ids.get(key))
            self.delete_log(topic, partition)
        if configs is not None:
            self._configs[topic] = dict(configs)
        path = self.partition_dir(topic, partition)
        if os.path.exists(path):
            shutil.rmtree(path)
        os.makedirs(path)
        self._write_partition_metadata(path, topic_id)
        fsync_dir(self.data_dir)
        return self._open_log(topic, partition, topic_id, self._configs.get(topic, {}))

    def delete_log(self, topic: str, partition: int) -> None:
        """Remove a hosted log and its files (topic deleted, or the replica moved away)."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        topic_id = self._topic_ids.pop(key, None)
        self.recovery_reports.pop(key, None)
        if log is not None:
            log.delete()
        path = self.partition_dir(topic, partition)
        if os.path.exists(path):
            doomed = f"{path}.{(topic_id or uuid.uuid4()).hex}.delete"
            os.rename(path, doomed)
            self.reaper.remove_tree(doomed)  # unlinking a large log's files takes a while: off the loop
        if not any(t == topic for t, _ in self._logs):
            self._configs.pop(topic, None)

    def set_aside(self, topic: str, partition: int) -> None:
        """Keep a log the metadata does not know (a *stray*) out of the way without deleting its data."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        topic_id = self._topic_ids.pop(key, None)
        self.recovery_reports.pop(key, None)
        if log is None:
            return
        log.close()
        path = self.partition_dir(topic, partition)
        target = f"{path}.{(topic_id or uuid.uuid4()).hex}-stray"
        os.rename(path, target)
        logger.warning("%s-%d is not assigned to this broker in the cluster metadata: moved to %s",
                       topic, partition, target)

    def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """Apply a topic's config overrides to its hosted logs."""
        configs = dict(configs)
        if self._configs.get(topic) == configs:
            return
        self._configs[topic] = configs
        config = self.log_config(configs)
        for (t, _), log in self._logs.items():
            if t == topic:
                log.config = config

    def set_default_configs(self, default_configs: Mapping[str, str]) -> None:
        """New broker-level topic defaults (a dynamic broker config changed): every hosted log's
        config is rebuilt from its topic's overrides over them, in effect from the next operation."""
        defaults = validate_topic_configs(default_configs)
        if defaults == self.default_configs:
            return
        self.default_configs = defaults
        for (topic, _), log in self._logs.items():
            log.config = self.log_config(self._configs.get(topic, {}))

    def topic_id_of(self, topic: str, partition: int) -> uuid.UUID | None:
        return self._topic_ids.get((topic, partition))

    def validate_configs(self, configs: Mapping[str, str | None]) -> dict[str, str]:
        """Validate topic config overrides (INVALID_CONFIG on error); return them normalised."""
        overrides = validate_topic_configs(configs)
        LogConfig.from_dict(overrides, self._defaults())
        return overrides

    def effective_configs(self, overrides: Mapping[str, str]) -> dict[str, tuple[str, bool]]:
        """Effective configs: name -> (value, is_default) for DescribeConfigs."""
        defaults = self._defaults()
        return {k: (overrides.get(k, v), k not in overrides) for k, v in sorted(defaults.items())}

    def get_log(self, topic: str, partition: int) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")
        return log

    def hosted(self) -> dict[TopicPartition, PartitionLog]:
        return dict(self._logs)

    def logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def is_open(self, log: PartitionLog) -> bool:
        """True while ``log`` is one of this manager's logs (not closed, not deleted)."""
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
        """Swap in the compaction passes the cleaner finished (call on the owner thread), and close the
        files of segments earlier swaps retired once ``file.delete.delay.ms`` has passed."""
        n = self.cleaner.apply_completed()
        if self._retiring:
            now = self.clock()
            for log in list(self._retiring):
                if self.is_open(log):
                    log.close_retired(now)
                if not self.is_open(log) or not log.retired:
                    del self._retiring[log]
        return n

    def _note_retiring(self, log: PartitionLog) -> None:
        self._retiring[log] = None

    def request_cleaning(self, logs: Iterable[PartitionLog] | None = None) -> None:
        """Ask the cleaner to look at the compacted logs among ``logs`` (default: all hosted ones);
        it queues those its policy says are due.  Cheap: no reads."""
        if self.offline:
            return
        for log in self._logs.values() if logs is None else logs:
            if log.config.compact and self.is_open(log):
                self.cleaner.request(log)

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
        self.reaper.close()
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
