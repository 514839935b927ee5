"""Consumer-lag report: committed offset, log end offset and lag per group and partition.

    python -m spark_jobs.lag_report -b 127.0.0.1:9092                 # every group
    python -m spark_jobs.lag_report -b 127.0.0.1:9092 --group billing --output /tmp/lag --format csv

Prints a per-group summary (partitions, total lag, max lag) and, with ``--details``, every
partition; ``--output`` also writes the per-partition rows with Spark (csv, json or parquet).
The offsets are read on the driver with kbroker's admin client; Spark does the aggregation and
the output, so the job fits into spark-submit pipelines.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spark_jobs._common import add_common_args, kafka_options, spark_session

SCHEMA = "group string, topic string, partition int, committed long, end_offset long, lag long"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.lag_report",
                                description="Report consumer-group lag on a kbroker cluster.")
    add_common_args(p)
    p.add_argument("--group", "-g", action="append", default=[],
                   help="group id to report (repeatable; default: every group)")
    p.add_argument("--details", action="store_true", help="also print one row per partition")
    p.add_argument("--output", help="write the per-partition rows to this directory")
    p.add_argument("--format", default="csv", choices=["csv", "json", "parquet"],
                   help="format of --output (default csv)")
    return p


def collect_lag(options: dict[str, str], groups: list[str]) -> list[tuple[Any, ...]]:
    """``(group, topic, partition, committed, end_offset, lag)`` rows for the given (or all) groups."""
    from client.sync import SyncAdmin
    from spark_jobs._reader import client_config

    rows: list[tuple[Any, ...]] = []
    with SyncAdmin(**client_config(options, "admin")) as admin:
        wanted = groups or sorted(g.group_id for g in admin.list_groups())
        for gid in wanted:
            for tp, info in sorted(admin.list_group_offsets(gid).items()):
                rows.append((gid, tp.topic, tp.partition, info.offset, info.end_offset, info.lag))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    rows = collect_lag(kafka_options(args), args.group)
    spark = spark_session("kbroker-lag-report", args.master)
    from pyspark.sql import functions as F

    df = spark.createDataFrame(rows, SCHEMA)
    summary = (df.groupBy("group")
               .agg(F.count("*").alias("partitions"), F.sum("lag").alias("total_lag"),
                    F.max("lag").alias("max_lag"))
               .orderBy(F.desc("total_lag"), "group"))
    if not rows:
        print("no committed offsets found" + (f" for {', '.join(args.group)}" if args.group else ""))
    else:
        summary.show(1000, truncate=False)
        if args.details:
            df.orderBy("group", "topic", "partition").show(100000, truncate=False)
    if args.output:
        df.coalesce(1).write.mode("overwrite").format(args.format).option("header", "true").save(args.output)
        print(f"wrote {len(rows)} rows to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
