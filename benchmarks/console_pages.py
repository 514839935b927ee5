"""How long the web console's pages take on a cluster of 10,000 partitions and 1,000 groups.

    .venv/bin/python benchmarks/console_pages.py [--brokers 3] [--partitions 10000] [--groups 1000] [--rounds 3]

Starts etcd and a cluster of ``--brokers`` brokers (the harness's command lines, each with its console),
creates one topic of ``--partitions`` partitions (replication factor 1, spread over the brokers: a
broker keeps three open files a partition, so 10,000 on one broker would need more than this machine's
20,000) and ``--groups`` groups with a committed offset each (through confluent-kafka's admin client,
each to its coordinator), then fetches every console page from broker 1's console ``--rounds`` times and
prints each page's size and time (median and worst).  A partition's offsets and size come from its
leader, which for two thirds of them is another broker: the page of a topic asks them for its 100 rows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from broker.testing.harness import KBrokerCluster  # noqa: E402


def fetch(url: str) -> tuple[int, float]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return len(body), time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--groups", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, KBrokerCluster(
            args.brokers, tmp, console=True, settings={"offsets.topic.num.partitions": 3}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        started = time.monotonic()
        admin.create_topics([NewTopic("wide", args.partitions, 1)], request_timeout=300)["wide"].result(300)
        deadline = time.monotonic() + 600
        while len(admin.list_topics("wide", timeout=60).topics["wide"].partitions) < args.partitions:
            assert time.monotonic() < deadline, "the topic's partitions never all showed up"
            time.sleep(0.5)
        print(f"topic of {args.partitions} partitions created in {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        pending = []
        for i in range(args.groups):
            tp = TopicPartition("wide", i % args.partitions, 0)
            pending += admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(f"group-{i:04d}", [tp])]).values()
            if len(pending) >= 50:
                for f in pending:
                    f.result(60)
                pending = []
        for f in pending:
            f.result(60)
        print(f"{args.groups} groups committed in {time.monotonic() - started:.1f} s")
        last_topic_page = -(-args.partitions // 100)
        last_group_page = -(-args.groups // 100)
        pages = ["/", "/topics", "/topics/wide", f"/topics/wide?page={last_topic_page}", "/groups",
                 f"/groups?page={last_group_page}", f"/groups/group-{args.groups - 1:04d}", "/brokers"]
        base = cluster.brokers[1].console_url
        times: dict[str, list[float]] = {p: [] for p in pages}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for page in pages:
                sizes[page], took = fetch(base + page)
                times[page].append(took)
        print(f"\n{args.brokers} brokers, {args.partitions} partitions, {args.groups} groups; "
              f"broker 1's console, {args.rounds} rounds")
        print(f"{'page':40} {'bytes':>9} {'median ms':>10} {'worst ms':>9}")
        for page in pages:
            print(f"{page:40} {sizes[page]:>9,} {statistics.median(times[page]) * 1000:>10.1f} "
                  f"{max(times[page]) * 1000:>9.1f}")
        del admin  # (before the brokers stop: no reconnect noise)


if __name__ == "__main__":
    main()
