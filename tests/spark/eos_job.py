"""The streaming job ``test_spark_exactly_once`` kills with kill -9 and restarts from its checkpoints.

``python eos_job.py BOOTSTRAP IN CHECKPOINTS OUT_EXACTLY_ONCE OUT_AT_LEAST_ONCE``: two queries copy IN
(``availableNow``, 200 offsets per micro-batch) through the ``kbroker`` sink, one with
``deliveryGuarantee=exactly-once`` into OUT_EXACTLY_ONCE, one with ``at-least-once`` into
OUT_AT_LEAST_ONCE (checkpoints under CHECKPOINTS); the process exits once both are done.  Task ``p`` of
each micro-batch waits ``0.2 + p`` seconds before its rows reach the sink, so a micro-batch has a second
in which some of its records are in the topic and the batch is not committed yet: where a kill lands.
"""

from __future__ import annotations

import os
import sys
import time


def skewed(value: bytes, _first: list[int] = []) -> bytes:  # noqa: B006 - one list per task (unpickled per task)
    """The identity, after ``0.2 + partition`` seconds on a task's first row."""
    if not _first:
        from pyspark import TaskContext

        _first.append(1)
        ctx = TaskContext.get()
        time.sleep(0.2 + (ctx.partitionId() if ctx is not None else 0))
    return value


def main(bootstrap: str, topic_in: str, checkpoints: str, *outputs: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import col, udf

    import spark_jobs

    spark = (SparkSession.builder.master("local[2]").appName("kbroker-eos-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")  # starts faster
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(spark)
    slow = udf(skewed, "binary", useArrow=False)
    queries = []
    for guarantee, topic_out in zip(("exactly-once", "at-least-once"), outputs, strict=True):
        rows = (spark.readStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic_in).option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", "200").load().select("key", slow(col("value")).alias("value")))
        queries.append(rows.writeStream.format("kbroker").option("kafka.bootstrap.servers", bootstrap)
                       .option("topic", topic_out).option("deliveryGuarantee", guarantee)
                       .option("checkpointLocation", os.path.join(checkpoints, guarantee))
                       .trigger(availableNow=True).start())
    for q in queries:
        q.awaitTermination()
        if q.exception() is not None:
            raise SystemExit(f"query failed: {q.exception()}")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
