"""Torn-tail recovery of a real ``python -m broker`` process.

The broker is stopped (cleanly or with ``kill -9``), the tail of the active
segment file is damaged the way a crash or power loss damages it (cut inside
the last batch, cut inside its header, zero-filled or garbage bytes after
it), and a new process starts on the same data directory.  Every whole batch
before the damage must be served intact, the damaged one must be gone, the
log must continue at the right offset, and a second restart must agree.
"""

from __future__ import annotations

import os
import random

import pytest
from e2e_helpers import read_all

from protocol.records import encode_batch

pytestmark = pytest.mark.slow

TOPIC = "torn"
BATCHES, PER_BATCH = 10, 5


def _batch(i: int) -> bytes:
    return encode_batch([(f"k{i}-{j}".encode(), f"v{i}-{j}-".encode() + b"p" * 50, [("b", str(i).encode())], None)
                         for j in range(PER_BATCH)])


def _expected(batches: int) -> list[tuple[int, bytes, bytes]]:
    return [(i * PER_BATCH + j, f"k{i}-{j}".encode(), f"v{i}-{j}-".encode() + b"p" * 50)
            for i in range(batches) for j in range(PER_BATCH)]


def _damage(path: str, last_batch_start: int, how: str) -> int:
    """Damage the segment tail; returns how many whole batches survive."""
    size = os.path.getsize(path)
    if how == "cut-in-last-batch":
        os.truncate(path, size - 7)
        return BATCHES - 1
    if how == "cut-in-last-header":
        os.truncate(path, last_batch_start + 30)
        return BATCHES - 1
    if how == "cut-after-length-field":
        os.truncate(path, last_batch_start + 12)
        return BATCHES - 1
    with open(path, "ab") as fh:
        if how == "zero-filled-tail":
            fh.write(b"\0" * 4096)
        elif how == "garbage-tail":
            fh.write(random.Random(3).randbytes(777))
        elif how == "half-batch-appended":
            fh.write(_batch(99)[:40])
    return BATCHES


CASES = [(how, "kill9") for how in ("cut-in-last-batch", "cut-in-last-header", "cut-after-length-field",
                                    "zero-filled-tail", "garbage-tail", "half-batch-appended")]
# after a clean stop the recovery point is the log end: the tail must be checked anyway
CASES += [("cut-in-last-batch", "sigterm"), ("zero-filled-tail", "sigterm")]


@pytest.mark.parametrize(("how", "stop"), CASES)
def test_torn_tail_is_cut_and_the_log_continues(broker_process, stop, how) -> None:
    bp = broker_process
    with bp.raw() as c:
        assert c.create_topic(TOPIC, 1) == 0
        for i in range(BATCHES):
            assert c.produce(TOPIC, 0, _batch(i)).base_offset == i * PER_BATCH
    segment = bp.data_dir / f"{TOPIC}-0" / f"{0:020d}.log"
    assert segment.exists(), sorted(p.name for p in (bp.data_dir / f"{TOPIC}-0").iterdir())
    last_batch_start = os.path.getsize(segment) - len(_batch(BATCHES - 1))
    if stop == "kill9":
        bp.kill9()
    else:
        assert bp.stop() == 0
    survivors = _damage(str(segment), last_batch_start, how)

    bp.start()
    assert bp.alive()
    with bp.raw() as c:
        assert c.list_offset(TOPIC, 0, -1).offset == survivors * PER_BATCH
        assert [(r.offset, r.key, r.value) for r in read_all(c, TOPIC)] == _expected(survivors)
        # the log continues right after the last whole batch
        new = c.produce(TOPIC, 0, _batch(survivors))
        assert (new.error_code, new.base_offset) == (0, survivors * PER_BATCH)
        # a long read across the repaired point decodes (CRC-checked) to exactly the expected records
        assert [(r.offset, r.key, r.value) for r in read_all(c, TOPIC)] == _expected(survivors + 1)
    # nothing of the damage remains on disk: a second restart (after kill -9) agrees
    bp.kill9()
    bp.start()
    with bp.raw() as c:
        assert [(r.offset, r.key, r.value) for r in read_all(c, TOPIC)] == _expected(survivors + 1)
        assert c.list_offset(TOPIC, 0, -1).offset == (survivors + 1) * PER_BATCH
