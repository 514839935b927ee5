"""The pytest plugin and fault injection, used the way a user's own suite would use them.

Each test writes a small test file that only names the ``kbroker`` / ``kbroker_session``
fixtures (the plugin is found through the ``pytest11`` entry point, nothing is imported by
hand) and runs it in a separate ``python -m pytest`` process, with real kafka-python and
confluent-kafka clients seeing the injected faults.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def run_user_suite(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user_suite.py").write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *args,
                           "test_user_suite.py"], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          env=env)


def assert_passed(proc: subprocess.CompletedProcess[str], count: int) -> None:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{count} passed" in proc.stdout, proc.stdout[-4000:]


def test_fixtures_are_registered_by_the_entry_point(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "fixtures defined from broker.testing.pytest_plugin" in proc.stdout, proc.stdout
    assert "\nkbroker -- " in proc.stdout and "\nkbroker_session [session scope] -- " in proc.stdout


def test_kafka_python_consumer_survives_injected_fetch_errors(tmp_path: Path):
    pytest.importorskip("kafka")
    proc = run_user_suite(tmp_path, '''
        import time

        from kafka import KafkaConsumer, KafkaProducer, TopicPartition
        from kafka.admin import KafkaAdminClient, NewTopic


        def test_consumer_gets_everything_despite_not_leader(kbroker):
            admin = KafkaAdminClient(bootstrap_servers=kbroker.bootstrap_servers)
            admin.create_topics([NewTopic("orders", 1, 1)])
            admin.close()
            producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap_servers)
            for i in range(20):
                producer.send("orders", b"order-%d" % i)
            producer.flush()
            producer.close()

            fault = kbroker.faults.inject("Fetch", error_code=6, times=2)   # NOT_LEADER_OR_FOLLOWER
            consumer = KafkaConsumer(bootstrap_servers=kbroker.bootstrap_servers, auto_offset_reset="earliest",
                                     enable_auto_commit=False, retry_backoff_ms=50)
            consumer.assign([TopicPartition("orders", 0)])
            got = []
            deadline = time.monotonic() + 60
            while len(got) < 20 and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got += [r.value for r in records]
            consumer.close()
            assert got == [b"order-%d" % i for i in range(20)]
            assert fault.remaining == 0          # both injected errors were actually served
            assert not kbroker.faults.active


        def test_sessions_broker_is_shared(kbroker_session):
            producer = KafkaProducer(bootstrap_servers=kbroker_session.bootstrap_servers)
            producer.send("shared", b"one").get(timeout=60)
            producer.close()


        def test_sessions_broker_is_shared_really(kbroker_session):
            consumer = KafkaConsumer("shared", bootstrap_servers=kbroker_session.bootstrap_servers,
                                     auto_offset_reset="earliest")
            got = []
            deadline = time.monotonic() + 60
            while not got and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got += [r.value for r in records]
            consumer.close()
            assert got == [b"one"]
        ''')
    assert_passed(proc, 3)


def test_injected_latency_and_dropped_connection_with_confluent_kafka(tmp_path: Path):
    pytest.importorskip("confluent_kafka")
    proc = run_user_suite(tmp_path, '''
        import time

        from confluent_kafka import Consumer, Producer, TopicPartition


        def produce(bootstrap, topic, values):
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": True})
            delivered = []
            for v in values:
                producer.produce(topic, v, on_delivery=lambda err, msg: delivered.append(err))
            producer.flush(30)
            assert delivered == [None] * len(values)


        def read_all(bootstrap, topic, n):
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                                 "auto.offset.reset": "earliest", "enable.auto.commit": False})
            consumer.assign([TopicPartition(topic, 0, 0)])
            got = []
            deadline = time.monotonic() + 60
            while len(got) < n and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    got.append(msg.value())
            consumer.close()
            return got


        def test_injected_produce_latency_is_observed(kbroker):
            produce(kbroker.bootstrap_servers, "slow", [b"warm-up"])
            kbroker.faults.inject("Produce", latency_ms=800)
            started = time.monotonic()
            produce(kbroker.bootstrap_servers, "slow", [b"late"])
            assert time.monotonic() - started >= 0.8
            assert read_all(kbroker.bootstrap_servers, "slow", 2) == [b"warm-up", b"late"]


        def test_dropped_connection_is_survived(kbroker):
            produce(kbroker.bootstrap_servers, "cut", [b"before"])
            fault = kbroker.faults.inject("Produce", drop_connection=True, times=1)
            produce(kbroker.bootstrap_servers, "cut", [b"after-%d" % i for i in range(5)])
            assert fault.remaining == 0
            # the dropped request was never appended, the retry was: nothing lost, nothing doubled
            assert read_all(kbroker.bootstrap_servers, "cut", 6) == [b"before"] + [b"after-%d" % i for i in range(5)]


        def test_fetch_errors_seen_by_librdkafka(kbroker):
            produce(kbroker.bootstrap_servers, "flaky", [b"a", b"b", b"c"])
            kbroker.faults.inject("Fetch", error_code=6, times=2)
            assert read_all(kbroker.bootstrap_servers, "flaky", 3) == [b"a", b"b", b"c"]
            assert not kbroker.faults.active
        ''')
    assert_passed(proc, 3)


def test_failing_user_test_still_stops_the_broker(tmp_path: Path):
    """A failing test's broker is torn down: the next test gets a fresh, empty one."""
    pytest.importorskip("kafka")
    proc = run_user_suite(tmp_path, '''
        import socket

        from kafka.admin import KafkaAdminClient, NewTopic

        first = []


        def test_first_fails(kbroker):
            first.append(kbroker)
            admin = KafkaAdminClient(bootstrap_servers=kbroker.bootstrap_servers)
            admin.create_topics([NewTopic("leftover", 1, 1)])
            admin.close()
            kbroker.faults.inject("Metadata", error_code=6, times=None)   # armed until cleared
            assert False, "user assertion"


        def test_second_gets_a_fresh_broker(kbroker):
            assert not kbroker.faults.active
            assert kbroker.call(lambda: sorted(kbroker.core.metadata.image.topics)) == ["__consumer_offsets"]
            assert not first[0].core.started      # the failed test's broker was stopped
        ''')
    assert proc.returncode == 1
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout[-3000:]
    assert "user assertion" in proc.stdout
