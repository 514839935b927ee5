"""The console's sans-IO parts: the metrics history's rings, sessions and CSRF tokens, formatting of
record bodies, pages of rows and charts, and the ``console.*`` settings with their shorthands."""

from __future__ import annotations

import pytest

from broker.config.loader import ConfigError
from broker.config.settings import BrokerConfig, console_address
from broker.console.sessions import SessionStore
from broker.console.views import body, chart, page_of
from broker.console.web import parse_time
from broker.core import load_config
from broker.observability.history import MetricsHistory


def test_history_keeps_an_hour_of_samples_and_gives_rates_of_counters() -> None:
    h = MetricsHistory(10, 60)
    assert h.capacity == 7
    for i in range(20):
        h.record(1000 + 10 * i, {"bytes_in": 100 * i, "lag:g": 50 - i}, {"t": 5 * i})
    assert len(h) == 7
    rates = h.rate("bytes_in")
    assert [t for t, _ in rates] == [1000 + 10 * i for i in range(14, 20)]
    assert all(r == pytest.approx(10.0) for _, r in rates)
    assert h.gauge("lag:g")[-1] == (1190, 31)
    assert h.topic_rates == {"t": pytest.approx(0.5)}


def test_history_drops_a_series_absent_for_a_window_and_bounds_the_series() -> None:
    h = MetricsHistory(1, 3, max_series=2)
    h.record(1, {"a": 1, "b": 1, "c": 1})
    assert sorted(h.names()) == ["a", "b"]
    for t in range(2, 7):
        h.record(t, {"a": t})
    assert h.names() == ["a"]
    assert h.gauge("b") == []
    h.record(7, {"a": 0})  # a counter that went down (its source restarted) gives no rate point
    assert h.rate("a")[-1][0] == 6


def test_sessions_expire_end_and_check_csrf() -> None:
    now = [0.0]
    store = SessionStore(lambda: now[0], timeout_s=10, max_sessions=2)
    a = store.new()
    assert store.get(a.id) is a and a.csrf_ok(a.csrf)
    assert not a.csrf_ok(None) and not a.csrf_ok("x" + a.csrf)
    now[0] = 11
    assert store.get(a.id) is None
    b, c, d = store.new("User:b"), store.new(), store.new()
    assert store.get(b.id) is None and len(store) == 2  # the least recently used went
    store.end_principal("User:b")
    store.end(c.id)
    assert store.get(c.id) is None and store.get(d.id) is d


def test_bodies_as_text_json_hex_and_cut_short() -> None:
    assert body(None, "text", 10).text is None
    assert body(b'{"a":[1,2]}', "json", 100).text == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    not_json = body(b"<b>", "json", 100)
    assert (not_json.text, not_json.format, not_json.note) == ("<b>", "text", "not JSON")
    assert body(bytes(range(20)), "hex", 100).text.splitlines()[1] == "10 11 12 13"
    big = body(b"x" * 100_000, "text", 4096)
    assert big.truncated and len(big.text) == 4096 and big.note == "first 4096 of 100000 bytes"
    assert body(b"\xff\xfe", "text", 10).text == "\ufffd\ufffd"


def test_pages_of_rows() -> None:
    rows, page = page_of(list(range(10_000)), "3", 100)
    assert rows[0] == 200 and page.count == 100 and page.has_previous and page.has_next
    assert page_of([], "x", 100)[1].number == 1
    assert page_of(list(range(5)), "999", 2)[0] == [4]


def test_chart_geometry_over_the_window() -> None:
    c = chart("t", [("a", [(0.0, 0.0), (1800.0, 5.0), (3600.0, 10.0)])], width=100, height=50, now=3600)
    assert c.lines[0][2] == "0.0,50.0 50.0,27.3 100.0,4.5"
    assert not c.empty and c.summary == "a: 10 /s"
    assert chart("t", [("a", [])], now=1).empty
    young = chart("t", [("a", [(3000.0, 1.0), (3600.0, 2.0)])], width=100, height=50, now=3600)
    assert young.lines[0][2] == "0.0,27.3 100.0,4.5"  # the history so far fills the width


def test_parse_time() -> None:
    assert parse_time("1700000000000") == 1_700_000_000_000
    assert parse_time("2024-05-01T12:00:00Z") == 1_714_564_800_000
    assert parse_time("2024-05-01T14:00:00+02:00") == 1_714_564_800_000
    assert parse_time("yesterday") is None and parse_time("") is None


def test_console_listener_and_its_shorthands() -> None:
    assert BrokerConfig().console_address is None  # an embedded broker has none unless asked
    assert load_config([], {}).console_address == ("127.0.0.1", 9080)
    assert load_config(["--console-port", "9181"], {}).console_address == ("127.0.0.1", 9181)
    assert load_config(["--console-port", "none"], {}).console_address is None
    assert load_config([], {"KBROKER_CONSOLE_PORT": "9182"}).console_address == ("127.0.0.1", 9182)
    assert load_config([], {"KBROKER_CONSOLE_LISTENER": "none"}).console_address is None
    assert load_config(["--set", "console.listener=http://0.0.0.0:80"], {}).console_address == ("0.0.0.0", 80)
    assert load_config(["--set", "console.listener=http://[::1]:81"], {}).console_address == ("::1", 81)
    assert console_address("http://h:1", "2") == ("h", 2)
    for bad in ("ftp://h:1", "http://h", "http://h:99999", "h:1"):
        with pytest.raises(ValueError):
            console_address(bad, None)
    with pytest.raises(ValueError):
        console_address(None, "eighty")


def test_a_bad_console_setting_is_refused_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        load_config(["--set", "console.listener=localhost:9080"], {})
    assert exit_info.value.code == 2
    assert "console.listener must be http://HOST:PORT or none" in capsys.readouterr().err
    with pytest.raises((SystemExit, ConfigError)):
        load_config(["--set", "console.refresh.ms=10"], {})
