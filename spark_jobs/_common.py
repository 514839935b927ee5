"""Shared plumbing of the ready-made jobs: argparse helpers and the SparkSession."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", "-b", default=os.environ.get("KBROKER_BOOTSTRAP", "127.0.0.1:9092"),
                        help="kbroker host:port list (default $KBROKER_BOOTSTRAP or 127.0.0.1:9092)")
    parser.add_argument("--kafka-option", "-o", action="append", default=[], metavar="KEY=VALUE",
                        help="extra client setting passed as kafka.KEY, e.g. -o request.timeout.ms=60000 "
                             "(repeatable)")
    parser.add_argument("--master", default=None,
                        help="Spark master when not set by spark-submit (default local[*])")


def kafka_options(args: argparse.Namespace) -> dict[str, str]:
    opts = {"kafka.bootstrap.servers": args.bootstrap_servers}
    for item in args.kafka_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--kafka-option needs KEY=VALUE, got {item!r}")
        opts[key if key.startswith("kafka.") else "kafka." + key] = value
    return opts


def spark_session(app_name: str, master: str | None = None, **conf: str) -> Any:
    """getOrCreate() a session (reusing spark-submit's / a test's) and register the format.

    Python workers default to this interpreter, so the executors can import kbroker and pyarrow.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_jobs

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif os.environ.get("PYSPARK_GATEWAY_PORT") is None:  # not under spark-submit
        builder = builder.master("local[*]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark_jobs.register(spark)
    return spark
