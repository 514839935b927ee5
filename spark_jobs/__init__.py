"""kbroker's PySpark integration: the ``kbroker`` data source and ready-made jobs.

::

    import spark_jobs
    spark_jobs.register(spark)
    df = (spark.read.format("kbroker")
          .option("kafka.bootstrap.servers", bs).option("subscribe", "orders").load())

Jobs: ``python -m spark_jobs.export_parquet``, ``python -m spark_jobs.windowed_count``,
``python -m spark_jobs.lag_report`` (each has ``--help``; all also run under spark-submit).
"""

from __future__ import annotations

from typing import Any

FORMAT = "kbroker"

__all__ = ["FORMAT", "register"]


def register(spark: Any) -> None:
    """Register the ``kbroker`` format on ``spark`` (a SparkSession); safe to call again, and to be
    called again before each of several concurrent streaming queries (the README says why)."""
    from spark_jobs.source import KBrokerDataSource

    spark.dataSource.register(KBrokerDataSource)
