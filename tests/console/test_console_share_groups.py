"""Share groups (KIP-932) in the console, over HTTP: ``/groups`` lists a share group as Kafka's tools do (type
``share``, its state, its partitions and lag) and ``/groups/NAME`` describes it — members with their client
ids, hosts, subscribed topics and assignments, and per partition the share start offset and lag (the
broker's ShareGroupDescribe and DescribeShareGroupOffsets).  Its actions: resetting the start offsets of an
empty group (AlterShareGroupOffsets; refused while it has members) and deleting it.  A confluent-kafka
``ShareConsumer`` is the member; waits are liveness bounds only."""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest
import share_helpers as share
from console_pages import Page, sasl_console_broker

from broker.testing.harness import BrokerProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    directory: Path = tmp_path_factory.mktemp("console-share")
    b = BrokerProcess(directory / "data", console=True,
                      extra_args=share.share_args(**{"offsets.topic.num.partitions": "3", "console.refresh.ms": "1000",
                                                     "console.history.interval.ms": "1000"})).start()
    try:
        yield b
    finally:
        alive = b.alive()
        b.stop()
        assert alive, f"the broker died:\n{b.log_tail()}"


class Http:
    """The console over HTTP with one session (its cookie), posting forms with the page's CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(self.base + path, timeout=60) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def post(self, path: str, form: dict[str, str]) -> str:
        """The form posted from the page at ``path``; the page it is redirected to (its flash messages)."""
        status, page = self.get(path)
        assert status == 200, page
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token is not None
        data = urllib.parse.urlencode({"csrf": html.unescape(token.group(1)), **form}).encode()
        with self.opener.open(urllib.request.Request(self.base + path, data=data), timeout=60) as response:
            return response.read().decode()


def flashes(page: str, kind: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(rf'<p class="flash {kind}"[^>]*>([^<]*)</p>', page)]


def table_rows(page: str, table: str) -> list[list[str]]:
    """The rows of a table: each cell's text (tags removed, entities unescaped)."""
    body = page.split(f'id="{table}"')[1].split("</tbody>")[0].split("<tbody>")[1]
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
             for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def tile(page: str, name: str) -> str:
    found = re.search(rf"<dt>{name}</dt><dd[^>]*>([^<]*)</dd>", page)
    assert found is not None, name
    return html.unescape(found.group(1))


def test_a_share_group_is_listed_and_described_with_start_offsets_lag_and_actions(broker: BrokerProcess) -> None:
    bs, http = broker.bootstrap_servers, Http(broker.console_url)
    group, topic = share.unique("console-share"), share.unique("jobs")
    share.create_topic(bs, topic)
    share.set_group_configs(bs, group, share_auto_offset_reset="earliest")
    share.produce(bs, topic, [f"job {i}" for i in range(10)])
    reader = share.ShareReader(bs, group, [topic], **{"client.id": "console-share-reader"})
    reader.start()
    path = "/groups/" + urllib.parse.quote(group, safe="")
    try:
        share.wait_until(lambda: len(reader.values()) == 10, what="the reader to get the 10 records")

        def described(start: str, lag: str, state: str) -> str | None:
            status, page = http.get(path)
            assert status == 200, page
            rows = table_rows(page, "offsets-table")
            return page if rows == [[f"{topic}-0", start, lag]] and tile(page, "State") == state else None

        # the reader accepts its records with its next poll: the start offset moves past them
        page = share.wait_until(lambda: described("10", "0", "Stable"), what="start offset 10, lag 0")
        assert tile(page, "Kind") == "share" and tile(page, "Protocol") == "share"
        assert tile(page, "Members") == "1" and tile(page, "Total lag") == "0"
        [member] = table_rows(page, "members-table")
        assert member[1:] == ["console-share-reader", member[2], topic, f"{topic}-0"]
        assert member[0] and member[2].lstrip("/") == "127.0.0.1"
        status, listing = http.get("/groups?q=" + urllib.parse.quote(group))
        assert table_rows(listing, "groups-table") == [[group, "share", "Stable", "share", "1", "0"]]
        # offsets are reset only while the group is empty
        page = http.post(path, {"action": "reset", "strategy": "earliest", "topic": ""})
        assert flashes(page, "error") == ["offsets not reset: the group is Stable with 1 member(s): offsets can be "
                                          "reset only while it is empty (stop its consumers first)"]
    finally:
        reader.stop()
    share.wait_until(lambda: described("10", "0", "Empty"), what="the group empty")
    share.produce(bs, topic, [f"job {i}" for i in range(10, 15)])
    share.wait_until(lambda: described("10", "5", "Empty"), what="lag 5")

    def charted(lag: str) -> bool:  # the lag chart, sampled every second here
        _, page = http.get(path)
        return f"Lag of the share-partitions whose state this broker keeps: lag: {lag}<" in page

    share.wait_until(lambda: charted("5"), what="lag 5 in the lag chart")
    page = http.post(path, {"action": "reset", "strategy": "earliest", "topic": ""})
    assert flashes(page, "ok") == ["offsets of 1 partition(s) reset to earliest"]
    share.wait_until(lambda: described("0", "15", "Empty"), what="start offset 0, lag 15")
    page = http.post(path, {"action": "reset", "strategy": "offset", "value": "12", "topic": topic})
    assert flashes(page, "ok") == ["offsets of 1 partition(s) reset to offset"]
    share.wait_until(lambda: described("12", "3", "Empty"), what="start offset 12, lag 3")
    # deleted when confirmed
    page = http.post(path, {"action": "delete", "confirm": "not-the-name"})
    assert flashes(page, "error") == ["type the group's name to confirm its deletion"]
    page = http.post(path, {"action": "delete", "confirm": group})
    assert flashes(page, "ok") == [f"group {group} deleted"]
    status, _ = http.get(path)
    assert status == 404
    assert table_rows(http.get("/groups?q=" + urllib.parse.quote(group))[1], "groups-table") == [
        [f"No groups match “{group}”."]]


def test_a_share_group_page_in_the_browser(browser: Any, broker: BrokerProcess) -> None:
    """Headless Chromium on a share group's page: its members and start offsets, refreshed in place as the
    member acknowledges records, with no JavaScript errors (and a screenshot)."""
    bs = broker.bootstrap_servers
    group, topic = share.unique("browser-share"), share.unique("tasks")
    share.create_topic(bs, topic)
    share.set_group_configs(bs, group, share_auto_offset_reset="earliest")
    page = Page(browser, broker.console_url)
    page.errors()
    reader = share.ShareReader(bs, group, [topic], **{"client.id": "browser-share-reader"})
    reader.start()
    try:
        url = "/groups/" + urllib.parse.quote(group, safe="")

        def group_exists() -> bool:  # (the group comes with the member's first heartbeat; before, the page is a 404)
            try:
                with urllib.request.urlopen(broker.console_url + url, timeout=10) as response:
                    return bool(response.status == 200)
            except urllib.error.HTTPError:
                return False

        page.wait(group_exists, "the group")
        page.open(url)
        page.wait(lambda: "browser-share-reader" in page.text("#members-table"), "the member")
        share.produce(bs, topic, [f"task {i}" for i in range(4)])
        page.wait(lambda: page.css("#offsets-table tbody tr").text == f"{topic}-0 4 0", "start offset 4, lag 0")
        assert page.css("#group-state-value").text == "Stable"
        page.screenshot("share-group")
    finally:
        reader.stop()
    assert page.errors() == []


# -- with SASL and ACLs: what the principal may DESCRIBE, and the actions Kafka's rules refuse ------------------

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}
MINE, SECRET = "alice-jobs", "payroll"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose listener requires SASL (the authorizer on): ``alice`` may DESCRIBE and READ the topics
    ``alice-*`` and DESCRIBE the groups ``alice-*``.  Share groups read by ``admin`` and then left empty:
    ``alice-queue`` (``alice-jobs``), ``alice-mixed`` (``alice-jobs`` and ``payroll``), ``payroll-queue``."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    from security.secure_clients import Login, confluent_conf, create_topics_and_acls

    directory: Path = tmp_path_factory.mktemp("console-share-sasl")
    b = sasl_console_broker(directory, PASSWORDS, {"offsets.topic.num.partitions": "3"}, share.share_args())
    try:
        conf = confluent_conf(Login(b.bootstrap("SASL_PLAINTEXT"), "SASL_PLAINTEXT", "SCRAM-SHA-512", "admin",
                                    PASSWORDS["admin"]))
        create_topics_and_acls(conf, {MINE: 1, SECRET: 1}, [
            ("User:alice", "TOPIC", "alice-", "DESCRIBE", True), ("User:alice", "TOPIC", "alice-", "READ", True),
            ("User:alice", "GROUP", "alice-", "DESCRIBE", True)])
        producer = Producer(conf)
        for topic in (MINE, SECRET):
            for i in range(3):
                producer.produce(topic, value=f"{topic} {i}".encode(), partition=0)
        assert producer.flush(60) == 0
        admin = AdminClient(conf)
        earliest = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)]
        groups = {"alice-queue": [MINE], "alice-mixed": [MINE, SECRET], "payroll-queue": [SECRET]}
        for f in admin.incremental_alter_configs([ConfigResource("GROUP", g, incremental_configs=earliest)
                                                  for g in groups]).values():
            f.result(60)
        readers = [share.ShareReader(b.bootstrap("SASL_PLAINTEXT"), g, topics, **conf) for g, topics in groups.items()]
        for r in readers:
            r.start()
        try:
            for r, topics in zip(readers, groups.values(), strict=True):
                share.wait_until(lambda r=r, n=3 * len(topics): len(r.values()) == n, what=f"{r.group}'s records")
        finally:
            for r in readers:
                r.stop()
        assert not [r.errors for r in readers if r.errors]
        yield b
    finally:
        alive = b.alive()
        b.stop()
        assert alive, f"the broker died:\n{b.log_tail()}"


def logged_in(broker: BrokerProcess, user: str) -> Http:
    http = Http(broker.console_url)
    page = http.post("/login", {"username": user, "password": PASSWORDS[user], "next": "/groups"})
    assert f"User:{user}" in page
    return http


def test_share_groups_show_only_what_the_principal_may_describe_and_refuse_her_actions(secured: BrokerProcess) -> None:
    alice, admin = logged_in(secured, "alice"), logged_in(secured, "admin")

    def offsets(http: Http, group: str) -> list[list[str]]:
        status, page = http.get("/groups/" + group)
        assert status == 200, page
        return table_rows(page, "offsets-table")

    # the members left: each group's start offsets move past the records its reader accepted
    share.wait_until(lambda: offsets(admin, "alice-mixed") == [[f"{MINE}-0", "3", "0"], [f"{SECRET}-0", "3", "0"]],
                     what="alice-mixed's start offsets")
    listed = [row[:3] for row in table_rows(admin.get("/groups")[1], "groups-table")]
    assert [r for r in listed if r[0] in ("alice-mixed", "alice-queue",
                                                                                  "payroll-queue")] == [["alice-mixed", "share", "Empty"], ["alice-queue", "share", "Empty"],
            ["payroll-queue", "share", "Empty"]]
    # alice: the groups she may DESCRIBE, with the topics she may DESCRIBE
    listed = [row[:2] for row in table_rows(alice.get("/groups")[1], "groups-table")]
    assert listed == [["alice-mixed", "share"], ["alice-queue", "share"]]
    assert offsets(alice, "alice-mixed") == [[f"{MINE}-0", "3", "0"]]
    assert offsets(alice, "alice-queue") == [[f"{MINE}-0", "3", "0"]]
    status, page = alice.get("/groups/payroll-queue")
    assert status == 404 and "GROUP_AUTHORIZATION_FAILED" in page
    # her actions need READ (reset: AlterShareGroupOffsets) and DELETE (DeleteGroups) on the group
    page = alice.post("/groups/alice-queue", {"action": "reset", "strategy": "earliest", "topic": ""})
    assert flashes(page, "error") == ["offsets not reset: GROUP_AUTHORIZATION_FAILED"]
    page = alice.post("/groups/alice-queue", {"action": "delete", "confirm": "alice-queue"})
    assert flashes(page, "error") == ["group not deleted: GROUP_AUTHORIZATION_FAILED"]
    assert offsets(admin, "alice-queue") == [[f"{MINE}-0", "3", "0"]]
