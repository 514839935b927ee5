"""The ``kbroker`` admin CLI as a real subprocess against a running broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ops_helpers import free_port, wait_for

from broker import BrokerThread
from client import TopicPartition
from client.sync import SyncConsumer, SyncProducer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    with BrokerThread(data_dir=str(tmp_path_factory.mktemp("cli") / "data")) as b:
        yield b


def kbroker(broker: BrokerThread | None, *args: str, stdin: bytes | None = None, timeout: float = 60,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    full_env = {k: v for k, v in os.environ.items() if k != "KBROKER_BOOTSTRAP"}
    full_env.update(env or {})
    if broker is not None and "KBROKER_BOOTSTRAP" not in (env or {}):
        args = ("--bootstrap-servers", broker.bootstrap_servers, *args)
    return subprocess.run([sys.executable, "-m", "kbroker_cli", *args], input=stdin, capture_output=True,
                          timeout=timeout, env=full_env)


def ok(proc: subprocess.CompletedProcess[bytes]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout!r}\nstderr: {proc.stderr!r}"
    return proc.stdout.decode()


def test_topics_lifecycle(broker):
    created = kbroker(broker, "topics", "create", "cli-orders", "--partitions", "3",
                      "--config", "retention.ms=86400000", "--config", "cleanup.policy=delete")
    ok(created)
    assert "created topic 'cli-orders'" in created.stderr.decode()

    again = kbroker(broker, "topics", "create", "cli-orders", "--partitions", "3")
    assert again.returncode == 1
    assert again.stderr.decode().strip() == "kbroker: topic 'cli-orders' already exists"
    ok(kbroker(broker, "topics", "create", "cli-orders", "--partitions", "3", "--if-not-exists"))

    assert "cli-orders" in ok(kbroker(broker, "topics", "list")).splitlines()
    assert "__consumer_offsets" not in ok(kbroker(broker, "topics", "list")).splitlines()
    assert "__consumer_offsets" in ok(kbroker(broker, "topics", "list", "--internal")).splitlines()
    assert json.loads(ok(kbroker(broker, "topics", "list", "--json")))["cli-orders"] == 3

    described = ok(kbroker(broker, "topics", "describe", "cli-orders"))
    head, *rows = described.splitlines()
    assert "Topic: cli-orders" in head and "PartitionCount: 3" in head and "ReplicationFactor: 1" in head
    assert "retention.ms=86400000" in head and "cleanup.policy=delete" in head
    assert "segment.bytes" not in head  # only the topic's own settings, not broker defaults
    assert [r.split("\t")[2] for r in rows] == ["Partition: 0", "Partition: 1", "Partition: 2"]
    data = json.loads(ok(kbroker(broker, "topics", "describe", "cli-orders", "--json")))
    assert data["partition_count"] == 3 and data["configs"]["retention.ms"] == "86400000"
    assert [p["log_end_offset"] for p in data["partitions"]] == [0, 0, 0]

    deleted = kbroker(broker, "topics", "delete", "cli-orders")
    ok(deleted)
    assert "cli-orders" not in ok(kbroker(broker, "topics", "list")).splitlines()
    gone = kbroker(broker, "topics", "delete", "cli-orders")
    assert gone.returncode == 1
    assert gone.stderr.decode().strip() == "kbroker: topic 'cli-orders' does not exist"
    ok(kbroker(broker, "topics", "delete", "cli-orders", "--if-exists"))
    missing = kbroker(broker, "topics", "describe", "cli-orders")
    assert (missing.returncode, missing.stderr.decode().strip()) == (1, "kbroker: topic 'cli-orders' does not exist")


def test_produce_stdin_then_consume_with_format(broker):
    ok(kbroker(broker, "topics", "create", "cli-fmt", "--partitions", "1"))
    lines = b"".join(b"key%d:value %d\n" % (i, i) for i in range(20)) + b"\n" + b"no-separator\r\n"
    produced = kbroker(broker, "produce", "cli-fmt", "--key-separator", ":", stdin=lines)
    ok(produced)
    assert "produced 21 record(s) to 'cli-fmt'" in produced.stderr.decode()

    out = ok(kbroker(broker, "consume", "cli-fmt", "--offset", "beginning", "--exit",
                     "--format", "%t|%p|%o|%k|%s|%K|%S\\n"))
    rows = out.splitlines()
    assert len(rows) == 21
    assert rows[0] == "cli-fmt|0|0|key0|value 0|4|7"
    assert rows[19] == "cli-fmt|0|19|key19|value 19|5|8"
    assert rows[20] == "cli-fmt|0|20||no-separator|-1|12"  # no separator: a null key; \r\n stripped

    # timestamps, --count, absolute and relative offsets
    ts = ok(kbroker(broker, "consume", "cli-fmt", "-o", "beginning", "-c", "1", "-f", "%T"))
    assert ts.isdigit() and len(ts) == 13
    assert ok(kbroker(broker, "consume", "cli-fmt", "-o", "18", "-e", "-f", "%o ")) == "18 19 20 "
    assert ok(kbroker(broker, "consume", "cli-fmt", "-o", "-2", "-e", "-f", "%o ")) == "19 20 "
    assert ok(kbroker(broker, "consume", "cli-fmt", "-o", "end", "-e")) == ""
    assert ok(kbroker(broker, "consume", "cli-fmt", "-o", "beginning", "-c", "3", "-f", "100%% %s;")) == \
        "100% value 0;100% value 1;100% value 2;"


def test_produce_file_with_progress_and_partition(broker, tmp_path: Path):
    ok(kbroker(broker, "topics", "create", "cli-bulk", "--partitions", "2"))
    data = tmp_path / "records.txt"
    data.write_bytes(b"".join(b"record-%05d\n" % i for i in range(5000)))
    produced = kbroker(broker, "produce", "cli-bulk", "--file", str(data), "--partition", "1",
                       "--progress", "--progress-every", "1000")
    ok(produced)
    progress = [line for line in produced.stderr.decode().splitlines() if "records/s" in line]
    assert len(progress) >= 5
    assert progress[0].startswith("[") and "%" in progress[0] and "1000 records" in progress[0]
    assert "100.0%" in progress[-1] and "5000 records" in progress[-1]

    assert ok(kbroker(broker, "consume", "cli-bulk", "--partition", "0", "-o", "beginning", "-e")) == ""
    out = ok(kbroker(broker, "consume", "cli-bulk", "--partition", "1", "-o", "beginning", "-e"))
    assert out.splitlines() == [f"record-{i:05d}" for i in range(5000)]

    bad = kbroker(broker, "produce", "cli-bulk", "--file", str(tmp_path / "nope.txt"))
    assert bad.returncode == 1 and "cannot read" in bad.stderr.decode()
    no_part = kbroker(broker, "consume", "cli-bulk", "--partition", "7", "-e")
    assert no_part.returncode == 1 and "has no partition 7" in no_part.stderr.decode()


def _describe_rows(out: str) -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    lines = out.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.startswith("GROUP ") and "LAG" in line)
    for line in lines[header_at + 1:]:
        if not line.strip():
            break
        cols = line.split()
        rows[int(cols[2])] = cols
    return rows


def test_groups_describe_shows_lag_after_commits(broker):
    ok(kbroker(broker, "topics", "create", "cli-lag", "--partitions", "2"))
    with SyncProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
        for i in range(12):
            producer.send("cli-lag", value=b"m%d" % i, partition=i % 2)
    # the CLI consumer commits what it printed
    consumed = ok(kbroker(broker, "consume", "cli-lag", "--group", "cli-readers", "-o", "beginning",
                          "--count", "12", "-f", "%p:%o\\n"))
    assert len(consumed.splitlines()) == 12
    with SyncProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
        for _ in range(5):
            producer.send("cli-lag", value=b"late", partition=0)

    out = ok(kbroker(broker, "groups", "describe", "cli-readers"))
    assert "has no active members" in out
    rows = _describe_rows(out)
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    assert rows[0][:6] == ["cli-readers", "cli-lag", "0", "6", "11", "5"]
    assert rows[1][:6] == ["cli-readers", "cli-lag", "1", "6", "6", "0"]
    assert rows[0][6:] == ["-", "-", "-"]

    listed = json.loads(ok(kbroker(broker, "groups", "list", "--json")))
    assert {"group": "cli-readers", "state": "Empty", "protocol_type": "consumer", "type": "classic"} in listed
    assert "cli-readers" in ok(kbroker(broker, "groups", "list"))

    # an active member: its id, host and client id are shown against its partitions
    member = SyncConsumer("cli-lag", bootstrap_servers=broker.bootstrap_servers, group_id="cli-readers",
                          client_id="lag-watcher", enable_auto_commit=False)
    try:
        wait_for(lambda: member.getmany(timeout_ms=100) is not None and len(member.assignment()) == 2, 60,
                 what="assignment")
        data = json.loads(ok(kbroker(broker, "groups", "describe", "cli-readers", "--json")))
        assert data["state"] == "Stable" and len(data["members"]) == 1
        assert data["members"][0]["client_id"] == "lag-watcher"
        assert sorted(data["members"][0]["assignment"]) == ["cli-lag-0", "cli-lag-1"]
        by_partition = {p["partition"]: p for p in data["partitions"]}
        assert by_partition[0]["lag"] == 5 and data["total_lag"] == 5
        table = ok(kbroker(broker, "groups", "describe", "cli-readers"))
        rows = _describe_rows(table)
        assert rows[0][6].startswith("lag-watcher-") and rows[0][7] == "/127.0.0.1" and rows[0][8] == "lag-watcher"
        assert "#PARTITIONS" in table
        member.commit({TopicPartition("cli-lag", 0): 11})
        rows = _describe_rows(ok(kbroker(broker, "groups", "describe", "cli-readers")))
        assert rows[0][3:6] == ["11", "11", "0"]
    finally:
        member.close()

    missing = kbroker(broker, "groups", "describe", "no-such-group")
    assert (missing.returncode, missing.stderr.decode().strip()) == (1, "kbroker: group 'no-such-group' does not exist")


def test_errors_and_exit_codes(broker):
    port = free_port()
    down = kbroker(None, "--bootstrap-servers", f"127.0.0.1:{port}", "--timeout", "2", "topics", "list")
    assert down.returncode == 1
    assert down.stderr.decode().startswith(f"kbroker: cannot connect to 127.0.0.1:{port}")

    via_env = kbroker(None, "topics", "list", env={"KBROKER_BOOTSTRAP": broker.bootstrap_servers})
    ok(via_env)

    assert kbroker(broker).returncode == 2
    assert kbroker(broker, "topics").returncode == 2
    assert kbroker(broker, "bogus").returncode == 2
    usage = kbroker(broker, "topics", "create", "x")  # --partitions missing
    assert usage.returncode == 2 and "--partitions" in usage.stderr.decode()
    both = kbroker(broker, "consume", "t", "--group", "g", "--partition", "0")
    assert both.returncode == 2 and "cannot be combined" in both.stderr.decode()
    assert kbroker(broker, "consume", "t", "--offset", "sideways").returncode == 2
    assert kbroker(broker, "topics", "create", "x", "-p", "1", "--config", "novalue").returncode == 2
    assert kbroker(broker, "--help").returncode == 0

    nope = kbroker(broker, "consume", "no-such-topic", "-e")
    assert (nope.returncode, nope.stderr.decode().strip()) == (1, "kbroker: topic 'no-such-topic' does not exist")
    bad_name = kbroker(broker, "topics", "create", "bad name", "-p", "1")
    assert bad_name.returncode == 1 and "invalid topic name" in bad_name.stderr.decode()


def test_console_script_is_installed(broker):
    script = Path(sys.executable).with_name("kbroker")
    if not script.exists():
        pytest.skip("the kbroker console script is not installed next to this interpreter")
    proc = subprocess.run([str(script), "-b", broker.bootstrap_servers, "topics", "list", "--internal"],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and b"__consumer_offsets" in proc.stdout


def test_configs_describe_and_alter(broker):
    ok(kbroker(broker, "topics", "create", "cli-configs", "--partitions", "1", "--config", "retention.ms=5000"))
    shown = ok(kbroker(broker, "configs", "describe", "--topic", "cli-configs"))
    assert shown.splitlines() == [
        "Dynamic configs for topic 'cli-configs' are:",
        "  retention.ms=5000 (DYNAMIC_TOPIC_CONFIG) synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}",
    ]
    altered = kbroker(broker, "configs", "alter", "--topic", "cli-configs", "--set", "max.message.bytes=2000",
                      "--append", "cleanup.policy=compact", "--delete", "retention.ms")
    ok(altered)
    assert "altered 3 config(s) of topic 'cli-configs'" in altered.stderr.decode()
    entries = {e["name"]: e for e in json.loads(ok(kbroker(broker, "configs", "describe", "--topic", "cli-configs",
                                                              "--all", "--json")))}
    assert entries["cleanup.policy"]["value"] == "compact,delete"
    assert entries["max.message.bytes"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert entries["retention.ms"] == {"name": "retention.ms", "value": "604800000", "source": "DEFAULT_CONFIG",
                                       "read_only": False, "synonyms": [
                                           {"name": "log.retention.ms", "value": "604800000",
                                            "source": "DEFAULT_CONFIG"}]}

    bad = kbroker(broker, "configs", "alter", "--topic", "cli-configs", "--set", "retention.hours=1")
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr.decode()
    bad = kbroker(broker, "configs", "alter", "--topic", "cli-configs", "--append", "retention.ms=1")
    assert bad.returncode == 1 and "append is not allowed" in bad.stderr.decode()
    assert kbroker(broker, "configs", "alter", "--topic", "cli-configs").returncode == 2

    ok(kbroker(broker, "configs", "alter", "--broker-defaults", "--set", "log.retention.ms=7200000"))
    defaults = ok(kbroker(broker, "configs", "describe", "--broker-defaults"))
    assert "  log.retention.ms=7200000 (DYNAMIC_DEFAULT_BROKER_CONFIG)" in defaults
    node = broker.core.config.node_id
    assert broker.call(lambda: broker.core.config.log_retention_ms) == 7200000
    mine = json.loads(ok(kbroker(broker, "configs", "describe", "--broker", str(node), "--all", "--json")))
    retention = next(e for e in mine if e["name"] == "log.retention.ms")
    assert (retention["value"], retention["source"], retention["read_only"]) == ("7200000",
                                                                                "DYNAMIC_DEFAULT_BROKER_CONFIG", False)
    assert next(e for e in mine if e["name"] == "port")["read_only"] is True
    bad = kbroker(broker, "configs", "alter", "--broker", str(node), "--set", "port=1")
    assert bad.returncode == 1 and "Cannot update these configs dynamically: port" in bad.stderr.decode()
    ok(kbroker(broker, "configs", "alter", "--broker-defaults", "--delete", "log.retention.ms"))
    assert broker.call(lambda: broker.core.config.log_retention_ms) == 604800000


def test_configs_of_a_group(broker):
    ok(kbroker(broker, "configs", "alter", "--group", "billing", "--set", "consumer.heartbeat.interval.ms=6000"))
    shown = ok(kbroker(broker, "configs", "describe", "--group", "billing"))
    assert shown.splitlines() == [
        "Dynamic configs for group 'billing' are:",
        "  consumer.heartbeat.interval.ms=6000 (GROUP_CONFIG) synonyms={GROUP_CONFIG:consumer.heartbeat.interval.ms="
        "6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
    ]
    everything = {e["name"]: e["value"] for e in json.loads(ok(kbroker(
        broker, "configs", "describe", "--group", "other", "--all", "--json")))}
    assert everything == {"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "5000",
                          "share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000",
                          "share.record.lock.duration.ms": "30000", "share.delivery.count.limit": "5",
                          "share.partition.max.record.locks": "2000", "share.auto.offset.reset": "latest",
                          "share.isolation.level": "read_uncommitted"}
    ok(kbroker(broker, "configs", "alter", "--group", "billing", "--set", "share.auto.offset.reset=earliest"))
    assert "share.auto.offset.reset=earliest (GROUP_CONFIG)" in ok(kbroker(broker, "configs", "describe", "--group",
                                                                         "billing"))
    bad = kbroker(broker, "configs", "alter", "--group", "billing", "--set", "consumer.session.timeout.ms=1")
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr.decode()
