"""The sink's own options (no Spark, no broker): deliveryGuarantee, transactionalIdPrefix, producer settings."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from spark_jobs._writer import SINK_TRANSACTION_TIMEOUT_MS, WriteOptions, batch_prefix, producer_config

BS = {"kafka.bootstrap.servers": "h:1"}


def test_delivery_guarantee_and_prefix() -> None:
    assert WriteOptions.from_options({}) == WriteOptions(False, None)
    assert WriteOptions.from_options({"deliveryguarantee": "Exactly-Once"}).exactly_once
    with pytest.raises(ValueError, match="deliveryGuarantee"):
        WriteOptions.from_options({"deliveryguarantee": "at-most-once"})
    with pytest.raises(ValueError, match="transactionalIdPrefix"):
        WriteOptions.from_options({"deliveryguarantee": "exactly-once", "transactionalidprefix": " "})
    eos = WriteOptions.from_options({"deliveryguarantee": "exactly-once", "transactionalidprefix": "orders"})
    assert batch_prefix(eos) == "orders"
    generated = batch_prefix(WriteOptions(True, None))
    assert generated is not None and generated.startswith("kbroker-spark-") and generated != batch_prefix(
        WriteOptions(True, None))
    assert batch_prefix(WriteOptions(False, None)) is None


def test_producer_settings() -> None:
    assert producer_config(BS, False) == {"bootstrap_servers": "h:1"}
    assert producer_config(BS, True) == {"bootstrap_servers": "h:1", "acks": -1,
                                         "transaction_timeout_ms": SINK_TRANSACTION_TIMEOUT_MS}
    assert producer_config({**BS, "kafka.transaction.timeout.ms": "9000"}, True)["transaction_timeout_ms"] == 9000
    with pytest.raises(ValueError, match="transactionalIdPrefix"):
        producer_config({**BS, "kafka.transactional.id": "x"}, True)
