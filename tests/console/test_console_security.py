"""The console of a broker whose listeners require SASL (SCRAM users, the authorizer on, nothing allowed
without an ACL), in headless Chromium.

Every page needs a login with the broker's users (a wrong password is refused after the failed-login
delay; the password never appears in a URL); the console then acts as that principal: ``alice`` sees
and browses only the topics her ACLs let her DESCRIBE and READ, and her actions are refused as a Kafka
client's would be (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED); ``admin`` (a super user)
sees everything, and the security page lists the users and ACLs.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_pages import TIMEOUT_S, Page, sasl_console_broker
from security.secure_clients import Login, confluent_conf, create_topics_and_acls

from broker.testing.harness import BrokerProcess

pytestmark = pytest.mark.slow

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}
MINE, SECRET = "alice-orders", "payroll"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    directory: Path = tmp_path_factory.mktemp("console-sasl")
    b = sasl_console_broker(directory, PASSWORDS, {"console.refresh.ms": 1000, "offsets.topic.num.partitions": 3})
    try:
        admin = confluent_conf(Login(b.bootstrap("SASL_PLAINTEXT"), "SASL_PLAINTEXT", "SCRAM-SHA-512", "admin",
                                     PASSWORDS["admin"]))
        create_topics_and_acls(admin, {MINE: 2, SECRET: 1}, [
            ("User:alice", "TOPIC", "alice-", "DESCRIBE", True), ("User:alice", "TOPIC", "alice-", "READ", True),
            ("User:alice", "GROUP", "alice-", "READ", True)])
        from confluent_kafka import Producer

        producer = Producer(admin)
        for topic in (MINE, SECRET):
            producer.produce(topic, key=b"k", value=f"a record of {topic}".encode(), partition=0)
        assert producer.flush(TIMEOUT_S) == 0
        yield b
    finally:
        alive = b.alive()
        b.stop()
        assert alive, f"the broker died:\n{b.log_tail()}"
    assert PASSWORDS["alice"] not in b.log_path.read_text()


@pytest.fixture()
def page(browser: Any, broker: BrokerProcess) -> Iterator[Page]:
    p = Page(browser, broker.console_url)
    browser.delete_all_cookies()
    p.errors()
    yield p
    assert [e for e in p.errors() if "the server responded with a status of 40" not in e] == []
    browser.delete_all_cookies()


def log_in(page: Page, user: str, password: str, path: str = "/") -> None:
    page.open(path)
    page.wait(lambda: "/login?next=" in page.driver.current_url, "the login page")
    page.fill("#username", user)
    page.fill("#password", password)
    page.submit("form.login button")


def test_every_page_needs_a_login_and_a_wrong_password_is_refused(page: Page) -> None:
    for path in ("/", "/topics", f"/topics/{MINE}", "/groups", "/brokers", "/security"):
        page.open(path)
        url = urllib.parse.urlsplit(page.driver.current_url)
        assert (url.path, urllib.parse.parse_qs(url.query)["next"]) == ("/login", [path])
    page.screenshot("login")
    log_in(page, "alice", "not-her-password", "/topics")
    assert page.text("#login-error") == "The user name or password is not right."
    log_in(page, "nobody", "whatever", "/topics")
    assert page.text("#login-error") == "The user name or password is not right."
    log_in(page, "alice", PASSWORDS["alice"], "/topics")
    assert page.driver.current_url == page.base + "/topics"
    assert PASSWORDS["alice"] not in page.driver.current_url
    assert page.css("header .who span").text == "User:alice"
    cookies = page.driver.get_cookies()
    assert cookies and all(c["httpOnly"] and c["sameSite"] == "Strict" for c in cookies)
    page.submit("header .who button")
    assert page.driver.current_url == page.base + "/login"
    page.open("/topics")
    assert "/login?next=" in page.driver.current_url


def test_a_user_sees_and_does_only_what_her_acls_allow(page: Page) -> None:
    log_in(page, "alice", PASSWORDS["alice"], "/topics")
    names = [a.text for a in page.all("#topics-table a")]
    assert names == [MINE]
    page.open(f"/topics/{SECRET}")
    assert f"There is no topic {SECRET} that you may see" in page.text()
    page.open(f"/topics/{MINE}?partition=0&mode=newest&count=5")
    assert [r.find_element("css selector", ".value").text for r in page.all("#records-table tr.record")] == [
        f"a record of {MINE}"]
    page.screenshot("topic-as-alice")
    # actions: refused as a Kafka client of hers would be
    page.all("#actions details summary")[3].click()
    page.fill("#t-confirm", MINE)
    page.submit("#actions details.danger button")
    assert page.text(".flash.error") == f"{MINE} not deleted: TOPIC_AUTHORIZATION_FAILED"
    page.all("#actions details summary")[0].click()
    page.fill("#c-name", "retention.ms")
    page.fill("#c-value", "1000")
    page.submit("#actions details:nth-of-type(1) button")
    assert page.text(".flash.error").startswith("retention.ms not changed: TOPIC_AUTHORIZATION_FAILED")
    page.open("/topics")
    page.css("#create-topic summary").click()
    page.fill("#new-name", "alice-new")
    page.submit("#create-topic button")
    assert page.text(".flash.error").startswith("topic alice-new was not created: TOPIC_AUTHORIZATION_FAILED")
    page.open("/security")
    assert "CLUSTER_AUTHORIZATION_FAILED" in page.text("#security")
    page.open("/")
    assert page.css("#cluster-id").text


def test_a_super_user_sees_everything_and_the_security_page(page: Page) -> None:
    log_in(page, "admin", PASSWORDS["admin"], "/security")
    users = [r.text.split()[0] for r in page.all("#users-table tbody tr")]
    assert users == ["admin", "alice"]
    acls = [r.text for r in page.all("#acls-table tbody tr")]
    assert "User:alice ALLOW READ TOPIC alice- PREFIXED *" in acls, acls
    page.screenshot("security")
    page.open("/topics")
    assert [a.text for a in page.all("#topics-table a")] == [MINE, SECRET]
    page.open(f"/topics/{SECRET}?partition=0&mode=newest&count=5")
    assert len(page.all("#records-table tr.record")) == 1
