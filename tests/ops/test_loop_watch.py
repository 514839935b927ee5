"""The event loop's watchdog: the stall decision on a fake clock, a LoopWatch on a real loop blocked by a
callback, and ``python -m broker`` whose log write blocks the loop (a patched ``os.pwrite``): the warning
names the blocking call, and /metrics counts the stall and its lag."""

from __future__ import annotations

import asyncio
import re
import threading
import time

import pytest
from ops_helpers import free_port, scrape, wait_for

from broker.observability.loop_watch import BEAT_INTERVAL_S, LoopWatch, StallDetector, beat_interval


def test_a_stall_is_reported_once_past_the_threshold_and_again_after_a_beat() -> None:
    d = StallDetector(0.2, now=10.0)
    assert d.check(10.1) is None
    assert d.check(10.25) == pytest.approx(0.25)
    assert d.check(10.9) is None  # the same stall: once
    assert d.beat(11.0) == pytest.approx(1.0)  # it lasted a second in all
    assert d.check(11.19) is None
    assert d.beat(11.2) is None  # no stall reported: nothing ended
    assert d.check(11.5) == pytest.approx(0.3)


def test_the_beat_is_a_quarter_of_a_short_threshold() -> None:
    assert beat_interval(0) == BEAT_INTERVAL_S
    assert beat_interval(5.0) == BEAT_INTERVAL_S
    assert beat_interval(0.1) == pytest.approx(0.025)


def test_a_blocked_loop_is_reported_with_the_stack_it_is_blocked_in() -> None:
    stalls: list[tuple[float, str, str | None]] = []
    lags: list[float] = []
    reported = threading.Event()

    def on_stall(blocked: float, stack: str, activity: str | None) -> None:
        stalls.append((blocked, stack, activity))
        reported.set()

    def hold_the_loop() -> None:
        # blocks until the watchdog has seen it (a bound, not a wait for time to pass)
        assert reported.wait(30), "no stall reported within 30 s"

    async def main() -> None:
        watch = LoopWatch(asyncio.get_running_loop(), 0.1, on_lag=lags.append, on_stall=on_stall,
                          activity=lambda: "holding the loop")
        watch.start()
        try:
            await asyncio.sleep(0.1)
            asyncio.get_running_loop().call_soon(hold_the_loop)
            # the beat after the stall measures how late it ran: at least the threshold less one beat interval
            # (the stall is counted from the last beat, the lateness from when the next was due)
            deadline = time.monotonic() + 30
            while not any(lag >= 0.1 - watch.interval for lag in lags) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        finally:
            watch.close()

    asyncio.run(main())
    assert len(stalls) == 1
    blocked, stack, activity = stalls[0]
    assert blocked >= 0.1
    assert "in hold_the_loop" in stack, stack
    assert activity == "holding the loop"  # asked on the watchdog's thread while the loop was held
    assert max(lags) >= 0.1 - beat_interval(0.1)


_SLOW_DISK_MAIN = """
import logging, os, sys, threading
real_pwrite = os.pwrite
seen = threading.Event()

class Seen(logging.Handler):
    def emit(self, record):
        seen.set()

logging.getLogger("kbroker.loop").addHandler(Seen())

def slow_disk_pwrite(fd, data, offset):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = ""
    if "/slow-disk-0/" in target and target.endswith(".log"):
        seen.wait(30)  # the loop stays blocked here until the watchdog has reported it
    return real_pwrite(fd, data, offset)

os.pwrite = slow_disk_pwrite
from broker.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_python_m_broker_warns_of_a_blocked_loop_and_counts_it(tmp_path) -> None:
    from broker.testing.harness import BrokerProcess
    from client.sync import SyncAdmin, SyncProducer

    class SlowDiskBroker(BrokerProcess):
        def command(self) -> list[str]:
            python, _, module, *args = super().command()
            assert module == "broker"
            return [python, "-c", _SLOW_DISK_MAIN, *args]

    metrics_port = free_port()
    bp = SlowDiskBroker(tmp_path / "data", extra_args=["--metrics-port", str(metrics_port),
                                                       "--set", "event.loop.stall.warn.ms=200"])
    bp.start()
    try:
        with SyncAdmin(bootstrap_servers=bp.bootstrap_servers) as admin:
            admin.create_topics({"slow-disk": 1})
        with SyncProducer(bootstrap_servers=bp.bootstrap_servers, linger_ms=0) as producer:
            producer.send("slow-disk", value=b"v")
        text = wait_for(lambda: (t := bp.log_path.read_text(errors="replace")) and
                        "event loop has been blocked" in t and t, 30, what="the stall warning")
        warning = text[text.index("event loop has been blocked"):]
        assert "slow_disk_pwrite" in warning, warning
        # and the request it is stuck in, which compiled modules' missing frames do not show
        first_line = warning.splitlines()[0]
        assert re.search(r"handling Produce v\d+ \(correlation id \d+\) from client '[^']*' at 127\.0\.0\.1:\d+",
                         first_line), first_line
        wait_for(lambda: "event loop ran again after" in bp.log_path.read_text(errors="replace"), 30,
                 what="the end of the stall")
        page = scrape(metrics_port)
        assert page.value("kbroker_event_loop_stalls_total") >= 1
        assert page.value("kbroker_event_loop_lag_seconds_count") >= 1
        # the beat that ran after the stall was late by most of it
        assert page.value("kbroker_event_loop_lag_seconds_bucket", le="0.1") < \
            page.value("kbroker_event_loop_lag_seconds_count")
    finally:
        bp.stop()
