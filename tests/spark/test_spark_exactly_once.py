"""Exactly-once writes of the ``kbroker`` sink (``deliveryGuarantee=exactly-once``), and what at-least-once
does in the same situations (so each test can fail):

* a streaming query killed (kill -9 of the driver process group) three times mid-stream and restarted
  from its checkpoint: the output read with ``read_committed`` holds every input record exactly once;
  the same copy with at-least-once, in the same driver, shows duplicates;
* a micro-batch replayed after its records were committed (the commit log entry of the last batch
  removed, as when the driver dies right after the sink's commit): not written twice (its replay writes
  the records again and aborts them when it finds the batch's marker);
* batch writes: a job's records all become visible, or — a task fails — none.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import new_topic, produce

from client.sync import SyncConsumer
from client.types import TopicPartition

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def values(bootstrap: str, topic: str, isolation: str, partitions: int) -> list[bytes]:
    with SyncConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, auto_offset_reset="earliest") as c:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        ends = c.end_offsets(tps)
        out: list[bytes] = []
        deadline = time.monotonic() + 60
        while any(c.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline
            for recs in c.getmany(timeout_ms=300).values():
                out += [r.value for r in recs]
    return out


class Ends:
    """The output topic's end: uncommitted (high watermark) and committed (last stable offset)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]
        self.hw = SyncConsumer(bootstrap_servers=bootstrap)
        self.lso = SyncConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")

    def written(self) -> int:
        return sum(self.hw.end_offsets(self.tps).values())

    def committed(self) -> int:
        return sum(self.lso.end_offsets(self.tps).values())

    def close(self) -> None:
        self.hw.close()
        self.lso.close()


def settled(bootstrap: str, topic: str, partitions: int) -> None:
    """Until every transaction on ``topic`` is decided: its markers are written after EndTxn is answered, and
    until then the last stable offset would end a read_committed read early."""
    ends = Ends(bootstrap, topic, partitions)
    try:
        deadline = time.monotonic() + 120  # a liveness bound
        while ends.committed() != ends.written():
            assert time.monotonic() < deadline, f"a transaction on {topic} was never decided"
            time.sleep(0.05)
    finally:
        ends.close()


class Job:
    """``eos_job.py`` in its own process group (the driver, its JVM and the Python workers)."""

    def __init__(self, *args: str, log: Path) -> None:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, str(HERE / "eos_job.py"), *args], stdout=out,
                                         stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)

    def tail(self) -> str:
        """The log's errors (the first lines of each exception and its causes) and its last lines."""
        lines = self.log.read_text(errors="replace").splitlines()
        causes = [ln for ln in lines if re.match(r"\s*(Caused by|\S*(Error|Exception)\b)", ln)]
        return "\n".join([*causes[:20], "...", *lines[-30:]])


def wait(cond: Callable[[], bool], job: Job, what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert job.alive(), f"the job ended before {what}:\n{job.tail()}"
        assert time.monotonic() < deadline, f"not {what} within {timeout_s} s:\n{job.tail()}"
        time.sleep(0.02)


@pytest.fixture
def jobs() -> Iterator[list[Job]]:
    started: list[Job] = []
    yield started
    for j in started:
        if j.alive():
            j.kill9()


@pytest.mark.timeout(600)
def test_stream_killed_and_restarted_writes_each_record_once(bootstrap: str, tmp_path: Path,
                                                             jobs: list[Job]) -> None:
    """One driver runs the same copy twice, exactly-once and at-least-once; it is killed three times."""
    n = 800
    src = new_topic(bootstrap, partitions=2, prefix="eos-in")
    eos, alo = new_topic(bootstrap, partitions=2, prefix="eos-out"), new_topic(bootstrap, partitions=2, prefix="alo-out")
    produce(bootstrap, src, n, partitions=2)
    eos_ends, alo_ends = Ends(bootstrap, eos, 2), Ends(bootstrap, alo, 2)

    def run() -> Job:
        jobs.append(Job(bootstrap, src, str(tmp_path / "ck"), eos, alo, log=tmp_path / "job.log"))
        return jobs[-1]

    try:
        # 1: the at-least-once query has written part of a micro-batch, not committed it
        job, w = run(), alo_ends.written()
        wait(lambda: alo_ends.written() > w, job, "an at-least-once write")
        job.kill9()
        # 2: right after the exactly-once sink committed a micro-batch (Spark may not have logged it)
        job, c = run(), eos_ends.committed()
        wait(lambda: eos_ends.committed() > c, job, "an exactly-once commit")
        job.kill9()
        # 3: exactly-once records written in open transactions
        job, w = run(), eos_ends.written()
        wait(lambda: eos_ends.written() > w, job, "an exactly-once write")
        job.kill9()
        job = run()
        assert job.proc.wait(300) == 0, job.tail()
    finally:
        eos_ends.close()
        alo_ends.close()
    expected = {b"v%d-" % i + b"x" * (i % 37) for i in range(n)}
    settled(bootstrap, eos, 2)
    got = Counter(values(bootstrap, eos, "read_committed", 2))
    assert set(got) == expected
    assert [v for v, k in got.items() if k > 1] == []
    assert len(values(bootstrap, eos, "read_uncommitted", 2)) > n  # aborted writes were there
    got = Counter(values(bootstrap, alo, "read_committed", 2))
    assert set(got) == expected
    assert sum(got.values()) > n, "at-least-once with a kill mid-batch wrote no duplicate: the test cannot fail"


def _copy_available_now(spark: Any, bootstrap: str, src: str, dst: str, ck: str, guarantee: str) -> None:
    q = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap).option("subscribe", src)
         .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "200").load()
         .selectExpr("key", "value").writeStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", dst).option("deliveryGuarantee", guarantee).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None


def test_a_replayed_micro_batch_is_not_written_twice(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    guarantee = "exactly-once"  # (at-least-once writes the batch again: see the kill test)
    src, dst = new_topic(bootstrap, partitions=2), new_topic(bootstrap, partitions=2)
    produce(bootstrap, src, 400, partitions=2)
    ck = tmp_path / "ck"
    _copy_available_now(spark, bootstrap, src, dst, str(ck), guarantee)
    settled(bootstrap, dst, 2)
    assert len(values(bootstrap, dst, "read_committed", 2)) == 400
    for name in ("1", ".1.crc"):  # as if the driver died after the sink's commit of batch 1
        (ck / "commits" / name).unlink(missing_ok=True)
    _copy_available_now(spark, bootstrap, src, dst, str(ck), guarantee)  # Spark replays batch 1
    settled(bootstrap, dst, 2)
    got = Counter(values(bootstrap, dst, "read_committed", 2))
    assert len(got) == 400 and set(got.values()) == {1}
    assert len(values(bootstrap, dst, "read_uncommitted", 2)) == 600  # rewritten by the replay, then aborted


def test_batch_write_commits_everything_or_nothing(spark: Any, bootstrap: str) -> None:
    dst = new_topic(bootstrap, partitions=2)
    rows = spark.range(0, 900, 1, 3).selectExpr("cast(id as string) value")
    rows.write.format("kbroker").mode("append").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", dst).option("deliveryGuarantee", "exactly-once").save()
    settled(bootstrap, dst, 2)
    assert sorted(values(bootstrap, dst, "read_committed", 2)) == sorted(str(i).encode() for i in range(900))
    failing = new_topic(bootstrap, partitions=2)
    from pyspark.sql.functions import udf

    def fail_from_600(value: str) -> str:  # local: pickled by value for the Python workers
        if int(value) >= 600:  # the rows of task 2: it fails once the other tasks' rows are written (prepared)
            from client import TopicPartition
            from client.sync import SyncConsumer

            tps = [TopicPartition(failing, p) for p in range(2)]
            with SyncConsumer(bootstrap_servers=bootstrap) as ends:
                deadline = time.monotonic() + 120  # a liveness bound (waited for, not slept: a busy machine)
                while sum(ends.end_offsets(tps).values()) < 600 and time.monotonic() < deadline:
                    time.sleep(0.05)
            raise RuntimeError("task 2 fails")
        return value

    fail = udf(fail_from_600, "string", useArrow=False)
    with pytest.raises(Exception, match="task 2 fails"):
        rows.select(fail("value").alias("value")).write.format("kbroker").mode("append") \
            .option("kafka.bootstrap.servers", bootstrap).option("topic", failing) \
            .option("deliveryGuarantee", "exactly-once").save()
    assert values(bootstrap, failing, "read_committed", 2) == []
    assert len(values(bootstrap, failing, "read_uncommitted", 2)) == 600  # written by tasks 0 and 1, aborted
