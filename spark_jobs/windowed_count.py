"""Streaming count of records per key and event-time window, written back to a topic.

    python -m spark_jobs.windowed_count -b 127.0.0.1:9092 --input-topic clicks \\
        --output-topic clicks-per-minute --window "1 minute" --checkpoint /tmp/ck-clicks

Each output record has the input key as key and a JSON value
``{"window_start": "...", "window_end": "...", "key": "...", "count": N}``.  With the default
``update`` output mode a window's count is re-emitted whenever it changes (the newest wins;
written per micro-batch with ``foreachBatch`` and the batch writer, since Python streaming sinks
only take append mode); with ``append`` each window is emitted once, after the watermark passes it.
Restarting with the same ``--checkpoint`` resumes where the previous run stopped.
"""

from __future__ import annotations

import argparse
import sys

from spark_jobs._common import add_common_args, kafka_options, spark_session


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.windowed_count",
                                description="Windowed count per key from one kbroker topic into another.")
    add_common_args(p)
    p.add_argument("--input-topic", required=True, help="topic(s) to read, comma-separated")
    p.add_argument("--output-topic", required=True, help="topic receiving the counts")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (reuse it to resume)")
    p.add_argument("--window", default="1 minute", help='window length, e.g. "30 seconds" (default 1 minute)')
    p.add_argument("--slide", default=None, help="slide interval for hopping windows (default: tumbling)")
    p.add_argument("--watermark", default="10 minutes", help="allowed lateness (default 10 minutes)")
    p.add_argument("--starting-offsets", default="earliest",
                   help='first run only: "earliest", "latest" or JSON (default earliest)')
    p.add_argument("--max-offsets-per-trigger", type=int, help="cap records per micro-batch")
    p.add_argument("--trigger", default="availableNow",
                   help='"availableNow" (process the backlog and stop), "once", or an interval '
                        'like "10 seconds" (run until interrupted)')
    p.add_argument("--output-mode", default="update", choices=["update", "append"],
                   help="update: emit changed counts each batch; append: emit a window once the "
                        "watermark passes it (default update)")
    p.add_argument("--shuffle-partitions", type=int, default=None,
                   help="spark.sql.shuffle.partitions for the aggregation state (fixed by the first run "
                        "of a checkpoint; Spark's default is 200)")
    p.add_argument("--timeout", type=float, default=None,
                   help="with an interval trigger, stop after this many seconds")
    return p


def build_query(spark, args: argparse.Namespace):  # -> DataStreamWriter
    from pyspark.sql import functions as F

    opts = kafka_options(args)
    reader = (spark.readStream.format("kbroker").options(**opts)
              .option("subscribe", args.input_topic)
              .option("startingOffsets", args.starting_offsets))
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    events = reader.load().withWatermark("timestamp", args.watermark)
    win = F.window("timestamp", args.window, args.slide) if args.slide else F.window("timestamp", args.window)
    counts = events.groupBy(win.alias("window"), F.col("key")).count()
    out = counts.select(
        F.col("key"),
        F.to_json(F.struct(
            F.date_format("window.start", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX").alias("window_start"),
            F.date_format("window.end", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX").alias("window_end"),
            F.col("key").cast("string").alias("key"),
            F.col("count"),
        )).alias("value"),
    )
    writer = (out.writeStream.option("checkpointLocation", args.checkpoint)
              .outputMode(args.output_mode)
              .queryName("kbroker_windowed_count"))
    if args.output_mode == "append":
        writer = writer.format("kbroker").options(**opts).option("topic", args.output_topic)
    else:
        # Python streaming sinks only take append mode; each update batch goes through the batch writer.
        topic = args.output_topic

        def write_batch(batch_df, batch_id: int) -> None:
            batch_df.write.format("kbroker").mode("append").options(**opts).option("topic", topic).save()

        writer = writer.foreachBatch(write_batch)
    if args.trigger == "availableNow":
        writer = writer.trigger(availableNow=True)
    elif args.trigger == "once":
        writer = writer.trigger(once=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    return writer


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    conf = {"spark.sql.shuffle.partitions": str(args.shuffle_partitions)} if args.shuffle_partitions else {}
    spark = spark_session("kbroker-windowed-count", args.master, **conf)
    query = build_query(spark, args).start()
    try:
        if args.timeout is not None and args.trigger not in ("availableNow", "once"):
            query.awaitTermination(args.timeout)
            query.stop()
        else:
            query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    progress = query.recentProgress
    rows = sum(p["numInputRows"] for p in progress)
    print(f"windowed_count: {len(progress)} micro-batches, {rows} input rows -> topic {args.output_topic}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
