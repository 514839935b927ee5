"""Export a topic (or an offset range of it) to Parquet.

    python -m spark_jobs.export_parquet -b 127.0.0.1:9092 --topic orders --output /data/orders \\
        --starting-offsets earliest --ending-offsets latest

or ``spark-submit spark_jobs/export_parquet.py ...`` with the same arguments.  Prints one JSON line
with the number of rows exported per partition.
"""

from __future__ import annotations

import argparse
import json
import sys

from spark_jobs._common import add_common_args, kafka_options, spark_session


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.export_parquet",
                                description="Export kbroker topic records to Parquet with Spark.")
    add_common_args(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--topic", help="topic, or a comma-separated list of topics")
    src.add_argument("--topic-pattern", help="regular expression of topics (subscribePattern)")
    p.add_argument("--output", required=True, help="output directory (any Spark-writable path)")
    p.add_argument("--starting-offsets", default="earliest",
                   help='"earliest" or JSON like {"orders":{"0":100,"1":-2}} (default earliest)')
    p.add_argument("--ending-offsets", default="latest",
                   help='"latest" or JSON like {"orders":{"0":500,"1":-1}} (default latest)')
    p.add_argument("--starting-timestamp", type=int, help="start at the first record with timestamp >= ms")
    p.add_argument("--ending-timestamp", type=int, help="stop before the first record with timestamp >= ms")
    p.add_argument("--min-partitions", type=int, help="split large partitions into at least this many tasks")
    p.add_argument("--include-headers", action="store_true", help="add the headers column")
    p.add_argument("--no-fail-on-data-loss", action="store_true",
                   help="skip records deleted by retention/DeleteRecords instead of failing")
    p.add_argument("--mode", default="errorifexists", choices=["errorifexists", "overwrite", "append", "ignore"],
                   help="Parquet save mode (default errorifexists)")
    p.add_argument("--partition-by", nargs="*", default=[], help="Parquet partition columns, e.g. topic partition")
    p.add_argument("--compression", default="snappy", help="Parquet codec (default snappy)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    spark = spark_session("kbroker-export-parquet", args.master)
    reader = spark.read.format("kbroker").options(**kafka_options(args))
    if args.topic:
        reader = reader.option("subscribe", args.topic)
    else:
        reader = reader.option("subscribePattern", args.topic_pattern)
    reader = (reader.option("startingOffsets", args.starting_offsets)
              .option("endingOffsets", args.ending_offsets)
              .option("includeHeaders", str(args.include_headers).lower())
              .option("failOnDataLoss", str(not args.no_fail_on_data_loss).lower()))
    if args.starting_timestamp is not None:
        reader = reader.option("startingTimestamp", str(args.starting_timestamp))
    if args.ending_timestamp is not None:
        reader = reader.option("endingTimestamp", str(args.ending_timestamp))
    if args.min_partitions:
        reader = reader.option("minPartitions", str(args.min_partitions))
    df = reader.load()
    writer = df.write.mode(args.mode).option("compression", args.compression)
    if args.partition_by:
        writer = writer.partitionBy(*args.partition_by)
    writer.parquet(args.output)
    written = spark.read.parquet(args.output).groupBy("topic", "partition").count().collect()
    summary = {"output": args.output, "rows_in_output": sum(r["count"] for r in written),
               "partitions": {f"{r['topic']}-{r['partition']}": r["count"] for r in sorted(written)}}
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
