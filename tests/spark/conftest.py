"""One SparkSession (local[2]) for every Spark test, plus helpers to fill topics."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import spark_jobs

    session = (SparkSession.builder.master("local[2]").appName("kbroker-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def bootstrap(kbroker_session: Any) -> str:
    return kbroker_session.bootstrap_servers
