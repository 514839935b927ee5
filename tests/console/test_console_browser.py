"""The web console of a real ``python -m broker`` (no security: the console is open), in headless Chromium.

Every page loads with no JavaScript errors and shows what was just made through Kafka clients: a
topic, a record found in the record browser by offset and by timestamp, a group whose lag (updated
in place, without reloading) falls to 0 once it has consumed.  The actions work (create a topic, add
partitions, change a config, delete records, reset a group's offsets, delete a group and a topic,
the deletions only when confirmed).  Hostile input — HTML and script in keys, values, headers, group
names and a topic name typed in the form — is shown as text and never runs; a huge record is cut
short in the view; bad offsets and timestamps get a clear message.  A form posted without the
session's CSRF token, or from another origin, is refused; pages carry a strict Content-Security-Policy.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_pages import TIMEOUT_S, Page

from broker.testing.harness import BrokerProcess

pytestmark = pytest.mark.slow

TOPIC = "orders"
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"
HOSTILE_GROUP = "g<script>window.__pwned=3</script>"
T0 = 1_700_000_000_000  # the records' timestamps: T0, T0 + 1000, ...


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    directory: Path = tmp_path_factory.mktemp("console")
    b = BrokerProcess(directory / "data", console=True, extra_args=[
        "--set", "console.refresh.ms=700", "--set", "console.history.interval.ms=1000",
        "--set", "offsets.topic.num.partitions=3"]).start()
    try:
        produce(b.bootstrap_servers, TOPIC, [(f"key-{i}".encode(), f'{{"n": {i}}}'.encode(), [("source", b"test")])
                                             for i in range(10)], partitions=2)
        yield b
    finally:
        alive = b.alive()
        b.stop()
        assert alive, f"the broker died:\n{b.log_tail()}"


@pytest.fixture()
def page(browser: Any, broker: BrokerProcess) -> Iterator[Page]:
    p = Page(browser, broker.console_url)
    p.errors()  # what earlier tests left in the log
    yield p
    assert p.no_alert(), "a page opened an alert: something from the data ran as script"
    assert browser.execute_script("return window.__pwned === undefined"), "hostile input ran as script"
    assert p.errors() == [], "the page logged JavaScript errors"


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]],
            *, partitions: int = 1, partition: int = 0) -> None:
    """Create ``topic`` (if new) and write ``records`` to one partition, with timestamps T0, T0+1 s, ..."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=TIMEOUT_S).topics:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "message.max.bytes": 1_000_000})
    failures: list[Any] = []
    for i, (key, value, headers) in enumerate(records):
        producer.produce(topic, value=value, key=key, headers=headers, partition=partition, timestamp=T0 + 1000 * i,
                         on_delivery=lambda err, _msg: failures.append(err) if err is not None else None)
    assert producer.flush(TIMEOUT_S) == 0
    assert failures == []


def consumer(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000})


def consume(c: Any, count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < count and time.monotonic() < deadline:
        message = c.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message)
    assert len(got) == count, f"consumed {len(got)} of {count}"
    return got


def http(url: str, data: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(data).encode() if data is not None else None,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers


# -- pages -----------------------------------------------------------------------------------------------------

def test_every_page_loads_and_shows_the_cluster(page: Page, broker: BrokerProcess) -> None:
    page.open("/")
    page.wait(lambda: page.css("#cluster-id").text, "the cluster id")
    assert page.css("#broker-1").text.split()[0] == "1" and "alive" in page.css("#broker-1").text
    assert "controller" in page.css("#broker-1").text
    # the charts fill from the broker's history as samples arrive (every second here)
    page.wait(lambda: "no samples yet" not in page.text("#charts"), "the charts' first samples")
    page.open("/topics")
    assert TOPIC in page.text("#topics-table")
    page.screenshot("topics")
    for path in ("/groups", "/brokers", "/security", "/topics/__consumer_offsets"):
        page.open(path)
        assert page.css("h1").text
    page.open("/brokers")
    page.screenshot("brokers")
    # every field of every form has a label, and the page reads on a phone's width without sideways scrolling
    for path in ("/topics", f"/topics/{TOPIC}", "/groups"):
        page.open(path)
        fields = page.all("main input:not([type=hidden]), main select, main textarea")
        assert fields and all(page.all(f"label[for='{f.get_attribute('id')}']") or
                              f.find_elements("xpath", "ancestor::label") for f in fields), path
    page.driver.set_window_size(390, 844)
    try:
        page.open("/")
        assert page.driver.execute_script("return document.documentElement.scrollWidth") <= 400
        page.screenshot("overview-phone")
    finally:
        page.driver.set_window_size(1280, 1000)
    page.open("/topics/no-such-topic")
    assert "There is no topic no-such-topic" in page.text()
    assert [e for e in page.errors() if "404 (Not Found)" not in e] == []  # the page's own status: 404


def test_records_found_by_offset_and_by_timestamp(page: Page) -> None:
    page.open(f"/topics/{TOPIC}")
    assert page.css("#partition-0 .end").text == "10"
    page.choose("#b-partition", "0")
    page.choose("#b-mode", "offset")
    page.fill("#b-offset", "7")
    page.fill("#b-count", "1")
    page.submit("#b-go")
    rows = page.all("#records-table tr.record")
    assert [(r.get_attribute("data-partition"), r.get_attribute("data-offset")) for r in rows] == [("0", "7")]
    assert rows[0].find_element("css selector", ".key").text == "key-7"
    assert "source: test" in rows[0].find_element("css selector", ".headers").text
    # by timestamp: the first record at or after T0 + 4.5 s is offset 5
    page.choose("#b-mode", "timestamp")
    page.fill("#b-timestamp", str(T0 + 4500))
    page.fill("#b-count", "2")
    page.choose("#b-format", "json")
    page.submit("#b-go")
    rows = page.all("#records-table tr.record")
    assert [r.get_attribute("data-offset") for r in rows] == ["5", "6"]
    assert rows[0].find_element("css selector", ".value pre").text == '{\n  "n": 5\n}'
    # the same moment as a date and time
    page.fill("#b-timestamp", time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 4000) / 1000)) + "Z")
    page.submit("#b-go")
    assert [r.get_attribute("data-offset") for r in page.all("#records-table tr.record")] == ["4", "5"]
    # the newest, over all partitions, and a search within them
    page.choose("#b-partition", "all")
    page.choose("#b-mode", "newest")
    page.fill("#b-count", "3")
    page.fill("#b-search", "key-8")
    page.submit("#b-go")
    assert [r.get_attribute("data-offset") for r in page.all("#records-table tr.record")] == ["8"]
    assert "1 record(s) shown of 3 read" in page.text("#browse-count")
    page.fill("#b-search", "")
    page.fill("#b-count", "5")
    page.submit("#b-go")
    page.screenshot("topic")


def test_bad_offsets_and_timestamps_get_a_clear_message(page: Page) -> None:
    base = f"/topics/{TOPIC}?partition=0&count=5"
    page.open(base + "&mode=offset&offset=abc")
    assert page.text("#browse-error") == "the offset must be a whole number, not 'abc'"
    page.open(base + "&mode=offset&offset=99")
    assert "partition 0: offset 99 is outside the log (0 to 9)" in page.text("#records")
    page.open(base + "&mode=timestamp&timestamp=yesterday")
    assert page.text("#browse-error").startswith("the timestamp must be milliseconds since 1970 or a date")
    page.open(base + "&mode=timestamp&timestamp=" + str(T0 + 3_600_000))
    assert "partition 0: no record at or after that time" in page.text("#records")
    page.open(f"/topics/{TOPIC}?partition=7&mode=newest&count=5")
    assert page.text("#browse-error") == f"{TOPIC} has no partition 7 (it has 2)"
    page.open(f"/topics/{TOPIC}?partition=0&mode=newest&count=-3")
    assert "a whole number of 1 or more" in page.text("#browse-error")


def test_hostile_records_and_names_are_shown_as_text(page: Page, broker: BrokerProcess) -> None:
    produce(broker.bootstrap_servers, "hostile", [
        (HOSTILE.encode(), HOSTILE.encode(), [(HOSTILE, HOSTILE.encode())]),
        (b"big", b"v" * 200_000, []),
    ])
    page.open("/topics/hostile?partition=0&mode=offset&offset=0&count=2&format=text")
    rows = page.all("#records-table tr.record")
    assert len(rows) == 2
    assert rows[0].find_element("css selector", ".key pre").text == HOSTILE
    assert rows[0].find_element("css selector", ".value pre").text == HOSTILE
    assert rows[0].find_element("css selector", ".headers").text == f"{HOSTILE}: {HOSTILE}"
    big = rows[1].find_element("css selector", ".value")
    assert "first 4096 of 200000 bytes" in big.text and len(big.find_element("css selector", "pre").text) == 4096
    for fmt in ("json", "hex"):
        page.open(f"/topics/hostile?partition=0&mode=offset&offset=0&count=2&format={fmt}")
        assert len(page.all("#records-table tr.record")) == 2
    page.screenshot("hostile-records")
    # a group named with HTML in it: listed and described as text, its URL encoded
    c = consumer(broker.bootstrap_servers, HOSTILE_GROUP)
    try:
        c.subscribe(["hostile"])
        c.commit(message=consume(c, 1)[0], asynchronous=False)
    finally:
        c.close()
    page.open("/groups")
    link = page.wait(lambda: [a for a in page.all("#groups-table a") if a.text == HOSTILE_GROUP], "the group")[0]
    assert link.get_attribute("href").endswith("/groups/" + urllib.parse.quote(HOSTILE_GROUP, safe=""))
    link.click()
    page.wait(lambda: page.css("h1 .name").text == HOSTILE_GROUP, "the group's page")
    # a topic name with HTML in it is refused by the broker, and the refusal is shown as text
    page.open("/topics")
    page.css("#create-topic summary").click()
    page.fill("#new-name", "<b>bold</b>")
    page.submit("#create-topic button")
    assert "topic <b>bold</b> was not created: INVALID_TOPIC_EXCEPTION" in page.text(".flash.error")


def test_group_lag_falls_to_zero_live_and_group_actions(page: Page, broker: BrokerProcess) -> None:
    group = "lag-group"
    c = consumer(broker.bootstrap_servers, group)
    from confluent_kafka import TopicPartition

    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        messages = consume(c, 4)
        c.commit(message=messages[-1], asynchronous=False)  # offset 4 of 10 committed: lag 6
        page.open("/groups/" + group)
        page.wait(lambda: page.css("#total-lag").text == "6", "a lag of 6")
        page.screenshot("group")
        consume(c, 6)
        c.commit(asynchronous=False)
        # the open page refreshes in place: no reload
        marker = page.css("h1")
        page.wait(lambda: page.css("#total-lag").text == "0", "the lag to fall to 0")
        page.wait(lambda: {e.text for e in page.all("#offsets-table .lag")} <= {"0"}, "every partition's lag 0")
        marker.is_enabled()  # still the same document
    finally:
        c.close()
    page.open("/groups")
    page.wait(lambda: any(r.text.startswith(group) and r.text.endswith(" 0")
                          for r in page.all("#groups-table tbody tr")), "the group listed with lag 0")
    page.screenshot("groups")
    # reset to the earliest offsets (the group is empty now), then delete it (confirmed)
    page.open("/groups/" + group)
    page.css("#actions details summary").click()
    page.choose("#r-strategy", "earliest")
    page.submit("#actions form button")
    assert page.text(".flash.ok") == "offsets of 1 partition(s) reset to earliest"
    page.wait(lambda: page.css("#total-lag").text == "10", "a lag of 10 after the reset")
    page.all("#actions details summary")[1].click()
    page.fill("#g-confirm", "not-the-name")
    page.submit("#actions details.danger button")
    assert page.text(".flash.error") == "type the group's name to confirm its deletion"
    page.all("#actions details summary")[1].click()
    page.fill("#g-confirm", group)
    page.submit("#actions details.danger button")
    assert page.text(".flash.ok") == f"group {group} deleted"
    page.open("/groups/" + group)
    assert "There is no group" in page.text()
    assert [e for e in page.errors() if "404 (Not Found)" not in e] == []  # the page's own status: 404


def test_topic_actions(page: Page, broker: BrokerProcess) -> None:
    page.open("/topics")
    page.css("#create-topic summary").click()
    page.fill("#new-name", "made-here")
    page.fill("#new-partitions", "2")
    page.fill("#new-configs", "retention.ms=3600000")
    page.submit("#create-topic button")
    assert page.text(".flash.ok") == "topic made-here created"
    assert len(page.all("#partitions-table tbody tr")) == 2
    assert any(r.text.startswith("retention.ms 3600000 topic override") for r in page.all("#configs-table tr"))

    def action(index: int) -> None:
        page.all("#actions details summary")[index].click()

    action(1)
    page.fill("#p-count", "3")
    page.submit("#actions details:nth-of-type(2) button")
    assert page.text(".flash.ok") == "made-here now has 3 partitions"
    assert len(page.all("#partitions-table tbody tr")) == 3
    action(0)
    page.fill("#c-name", "cleanup.policy")
    page.fill("#c-value", "compact")
    page.submit("#actions details:nth-of-type(1) button")
    assert page.text(".flash.ok") == "cleanup.policy set to compact"
    action(0)
    page.fill("#c-name", "segment.bytes")
    page.fill("#c-value", "not-a-number")
    page.submit("#actions details:nth-of-type(1) button")
    assert page.text(".flash.error").startswith("segment.bytes not changed: INVALID_CONFIG")
    # delete records up to an offset
    produce(broker.bootstrap_servers, "made-here", [(b"k%d" % i, b"x", []) for i in range(5)])  # compacted: keyed
    page.open("/topics/made-here")
    action(2)
    page.fill("#d-offset", "3")
    page.submit("#actions details:nth-of-type(3) button")
    assert page.text(".flash.ok") == "partition 0 now starts at offset 3"
    assert page.css("#partition-0 .start").text == "3"
    # delete the topic: refused without the right confirmation, done with it
    action(3)
    page.fill("#t-confirm", "made")
    page.submit("#actions details.danger button")
    assert page.text(".flash.error") == "type the topic's name to confirm its deletion"
    action(3)
    page.fill("#t-confirm", "made-here")
    page.submit("#actions details.danger button")
    assert page.text(".flash.ok") == "topic made-here deleted"
    assert "made-here" not in page.text("#topics-table")


def test_forms_need_the_csrf_token_and_the_same_origin(broker: BrokerProcess) -> None:
    url = broker.console_url
    status, body, headers = http(url + "/topics")
    assert status == 200
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    token = body.split('name="csrf" value="')[1].split('"')[0]
    form = {"name": "csrf-made", "partitions": "1", "replication_factor": "-1"}
    assert http(url + "/topics", form, {"Cookie": cookie})[0] == 403
    assert http(url + "/topics", {**form, "csrf": "forged"}, {"Cookie": cookie})[0] == 403
    assert http(url + "/topics", {**form, "csrf": token}, {"Cookie": cookie, "Origin": "http://evil.example"})[0] == 403
    assert http(url + "/topics", {**form, "csrf": token})[0] == 403  # another session's token
    status, body, _ = http(url + "/topics", {**form, "csrf": token}, {"Cookie": cookie, "Origin": url})
    assert status == 200 and "topic csrf-made created" in body


def test_overview_charts_traffic_as_it_happens(page: Page, broker: BrokerProcess) -> None:
    """Produce and consume for a few seconds: the overview's charts (from the broker's history, sampled every
    second here) show the records and requests as they come, in place."""
    import threading

    from confluent_kafka import Producer

    stop = threading.Event()

    def traffic() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
        c = consumer(broker.bootstrap_servers, "chart-group")
        c.subscribe([TOPIC])
        try:
            while not stop.is_set():
                for i in range(50):
                    producer.produce(TOPIC, value=b'{"chart": %d}' % i, key=b"chart")
                producer.flush(TIMEOUT_S)
                c.poll(0.05)
                time.sleep(0.05)
        finally:
            c.close()

    thread = threading.Thread(target=traffic, daemon=True)
    thread.start()
    try:
        page.open("/")
        page.wait(lambda: "records: 0.0 rec/s" not in page.text("#charts")
                  and "records: no data" not in page.text("#charts"), "records produced in the chart", timeout=60)
        page.wait(lambda: len(page.all("#charts polyline")) >= 4, "the charts' lines")
        time.sleep(3)  # a few more samples: a line, not a point, in the screenshot
        page.screenshot("overview")
    finally:
        stop.set()
        thread.join(TIMEOUT_S)
