"""The console of a broker with many partitions and groups answers page by page: a topic of 1,000
partitions and 1,000 groups with committed offsets are shown 100 rows at a time (``console.page.size``),
each page quickly, the last page holding the last rows; filters narrow the lists.  (10,000 partitions
are measured in ``benchmarks/RESULTS.md``: one broker here cannot open that many logs' files.)"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.e2e_helpers import RawClient

from broker.testing.harness import BrokerProcess
from protocol.api import ApiKey

pytestmark = pytest.mark.slow

PARTITIONS, GROUPS = 1000, 1000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    directory: Path = tmp_path_factory.mktemp("console-scale")
    b = BrokerProcess(directory / "data", console=True, extra_args=["--set", "offsets.topic.num.partitions=3"]).start()
    try:
        raw = RawClient(b.host, b.port, timeout=120)
        assert raw.create_topic("wide", PARTITIONS) == 0
        for i in range(GROUPS):
            resp = raw.request(ApiKey.OFFSET_COMMIT, 8, {
                "group_id": f"group-{i:04d}", "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "retention_time_ms": -1, "topics": [{"name": "wide", "partitions": [
                    {"partition_index": i % PARTITIONS, "committed_offset": 0, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}]})
            assert resp["topics"][0]["partitions"][0]["error_code"] == 0
        yield b
    finally:
        b.stop()


def get(url: str) -> tuple[str, float]:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode(), time.monotonic() - started


def rows(html: str, table: str) -> list[str]:
    body = html.split(f'id="{table}"')[1].split("</tbody>")[0]
    return re.findall(r'<th scope="row">(?:<a href="[^"]*">)?([^<]+)', body)


def test_a_topic_of_many_partitions_page_by_page(broker: BrokerProcess) -> None:
    html, first = get(broker.console_url + "/topics/wide")
    assert rows(html, "partitions-table") == [str(p) for p in range(100)]
    assert "Page 1 of 10 (1,000 rows)" in html
    html, last = get(broker.console_url + "/topics/wide?page=10")
    assert rows(html, "partitions-table") == [str(p) for p in range(900, 1000)]
    html, listing = get(broker.console_url + "/topics?q=wid")
    assert rows(html, "topics-table") == ["wide"]
    assert max(first, last, listing) < 5, (first, last, listing)


def test_a_thousand_groups_page_by_page(broker: BrokerProcess) -> None:
    html, first = get(broker.console_url + "/groups")
    assert rows(html, "groups-table") == [f"group-{i:04d}" for i in range(100)]
    assert "Page 1 of 10 (1,000 rows)" in html
    html, last = get(broker.console_url + "/groups?page=10")
    assert rows(html, "groups-table") == [f"group-{i:04d}" for i in range(900, 1000)]
    html, filtered = get(broker.console_url + "/groups?q=group-012")
    assert rows(html, "groups-table") == [f"group-{i:04d}" for i in range(120, 130)]
    html, one = get(broker.console_url + "/groups/group-0999")
    assert 'id="total-lag">0<' in html
    assert max(first, last, filtered, one) < 5, (first, last, filtered, one)
