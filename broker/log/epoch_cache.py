"""The leader-epoch cache of one partition (Kafka's ``LeaderEpochFileCache``, KIP-101/279).

An ordered list of ``(epoch, start_offset)``: the first offset written in each
leader epoch.  A leader adds an entry when it takes over (its epoch at its log
end offset); a follower adds one when it appends the first batch of a newer
epoch.  It answers OffsetsForLeaderEpoch and the divergence check of Fetch: the
end offset of an epoch is the start offset of the next higher one (or the log
end offset for the latest).

Persisted in ``leader-epoch-checkpoint`` in Kafka's text format — a version line
(0), a count line, then one ``epoch start_offset`` line per entry — replaced
atomically on every change (changes are rare: one per leader change).

A checkpoint that cannot be read leaves the cache empty (``unreadable`` says so);
the log then knows no epoch, and its owner does what Kafka does for a replica
without epochs (see ``PartitionLog.prepare_to_follow`` and
``PartitionLog.assign_leader_epoch``): a follower truncates to its high watermark
before fetching, a leader rebuilds the cache from its batches' leader epochs.
"""

from __future__ import annotations

import bisect
import logging
import os

from broker.log._fs import atomic_write

log = logging.getLogger("kbroker.log")

__all__ = ["CHECKPOINT_NAME", "UNDEFINED", "LeaderEpochCache"]

CHECKPOINT_NAME = "leader-epoch-checkpoint"
UNDEFINED = -1


class LeaderEpochCache:
    def __init__(self, directory: str | None) -> None:
        self.path = os.path.join(directory, CHECKPOINT_NAME) if directory is not None else None
        self.entries: list[tuple[int, int]] = []
        #: the checkpoint on disk could not be read (the cache started empty)
        self.unreadable = False
        if self.path is not None:
            self._load()

    # -- persistence -----------------------------------------------------------------
    def _load(self) -> None:
        assert self.path is not None
        try:
            with open(self.path, "rb") as fh:
                text = fh.read().decode("ascii")
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:  # ValueError: not text at all
            self._unreadable(exc)
            return
        lines = [line.split() for line in text.splitlines() if line.strip()]
        try:
            if lines[0] != ["0"] or int(lines[1][0]) != len(lines) - 2:
                raise ValueError("bad header")
            entries = [(int(e), int(o)) for e, o in lines[2:]]
            if any(e < 0 or o < 0 for e, o in entries):
                raise ValueError("negative epoch or offset")
        except (ValueError, IndexError) as exc:
            self._unreadable(exc)
            return
        entries.sort()
        self.entries = entries

    def _unreadable(self, exc: Exception) -> None:
        log.warning("%s is unreadable (%s: %s); starting with an empty leader-epoch cache (a follower truncates "
                    "to its high watermark, a leader rebuilds the cache from its batches)", self.path,
                    type(exc).__name__, exc)
        self.unreadable = True

    def _persist(self) -> None:
        if self.path is None:
            return
        text = f"0\n{len(self.entries)}\n" + "".join(f"{e} {o}\n" for e, o in self.entries)
        atomic_write(self.path, text.encode())
        self.unreadable = False

    @property
    def exists_on_disk(self) -> bool:
        return self.path is not None and os.path.exists(self.path)

    # -- queries ---------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch in which ``offset`` was written (UNDEFINED if before every entry)."""
        i = bisect.bisect_right([o for _, o in self.entries], offset) - 1
        return self.entries[i][0] if i >= 0 else UNDEFINED

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)``: the largest known epoch <= ``requested_epoch`` and where it ends.

        Above every known epoch (or UNDEFINED): ``(-1, -1)``.  Below every known
        epoch: ``(requested_epoch, start of the first)``.
        """
        if requested_epoch == UNDEFINED or not self.entries:
            return UNDEFINED, UNDEFINED
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        epochs = [e for e, _ in self.entries]
        hi = bisect.bisect_right(epochs, requested_epoch)
        if hi == len(self.entries):
            return UNDEFINED, UNDEFINED
        higher_start = self.entries[hi][1]
        if hi == 0:
            return requested_epoch, higher_start
        return self.entries[hi - 1][0], higher_start

    # -- changes ---------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns True if that changed the cache."""
        if epoch < 0:
            return False
        if self.entries and epoch <= self.latest_epoch:
            return False
        # Entries at or past the new start offset belong to a diverged history.
        kept = [(e, o) for e, o in self.entries if o < start_offset]
        kept.append((epoch, start_offset))
        self.entries = kept
        self._persist()
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """The log now ends at ``end_offset``: forget epochs that start there or later."""
        kept = [(e, o) for e, o in self.entries if o < end_offset]
        if kept != self.entries:
            self.entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop epochs wholly before it, clamp the first."""
        if not self.entries or self.entries[0][1] >= start_offset:
            return
        i = bisect.bisect_right([o for _, o in self.entries], start_offset) - 1
        kept = self.entries[i:]
        kept[0] = (kept[0][0], start_offset)
        if kept != self.entries:
            self.entries = kept
            self._persist()

    def clear(self) -> None:
        if self.entries:
            self.entries = []
            self._persist()
