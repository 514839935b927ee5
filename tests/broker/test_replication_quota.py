"""Replication throttles (sans-IO): the windowed byte rate and which replicas a throttle names."""

from __future__ import annotations

from broker.replication.quota import UNLIMITED, RateQuota, throttled


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_quota_is_exceeded_above_its_rate_and_recovers_as_windows_pass() -> None:
    clock = Clock()
    quota = RateQuota(lambda: 1000, window_num=3, window_s=1.0, clock=clock)
    quota.record(900)
    assert not quota.exceeded()  # a fresh quota lets a window's worth through
    quota.record(200)
    assert quota.exceeded()
    clock.now += 0.5
    assert quota.exceeded()  # 1,100 bytes over the one window it spans
    clock.now += 1.0
    assert not quota.exceeded()  # over 1.5 s: 733 bytes/s
    clock.now += 5
    assert quota.rate() == 0 and quota.total == 1100


def test_an_unlimited_or_raised_rate_never_holds_back() -> None:
    clock = Clock()
    limit = [UNLIMITED]
    quota = RateQuota(lambda: limit[0], clock=clock)
    quota.record(10**12)
    assert not quota.exceeded()
    limit[0] = 10
    assert quota.exceeded()  # the rate is read on every check: a dynamic config
    limit[0] = 10**13
    assert not quota.exceeded()


def test_throttled_replica_lists_name_partitions_on_their_own_broker() -> None:
    assert throttled("*", 5, 1)
    assert throttled("0:1,0:2,1:2", 0, 2) and throttled("0:1, 0:2", 0, 1)
    assert not throttled("0:1,0:2,1:2", 1, 1)
    assert not throttled("", 0, 1) and not throttled(None, 0, 1)


def test_a_throttled_fetch_carries_at_most_a_window_of_the_rate() -> None:
    """However large replica.fetch.max.bytes is, one fetch of a throttled partition moves one window's
    worth: a fresh quota is never exceeded, so the cap is what bounds its first burst."""
    limit = [1_000_000]
    quota = RateQuota(lambda: limit[0], window_s=1.0, clock=Clock())
    assert quota.allowance() == 1_000_000
    limit[0] = 0
    assert quota.allowance() == 1  # a zero rate still moves a batch at a time (the read's minimum)
    limit[0] = UNLIMITED
    assert quota.allowance() == UNLIMITED
    assert RateQuota(lambda: 4000, window_s=0.5).allowance() == 2000
