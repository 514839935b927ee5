"""Heartbeat's common case answered without effects (``GroupCoordinator.heartbeat_now``), twinned with the
general path: on every version the same answer and the same session deadlines; and for every case it
leaves to the general path, None with nothing changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from test_group_harness import Harness

from protocol.schemas import heartbeat

VERSIONS = range(0, 5)
REQUEST = heartbeat.HeartbeatRequest


def _request(version: int, group: str, member: str, generation: int, instance: str | None = None) -> Any:
    body: dict[str, Any] = {"group_id": group, "generation_id": generation, "member_id": member}
    if version >= 3:
        body["group_instance_id"] = instance
    return REQUEST.decode(version, REQUEST.encode(version, body))


def _stable(h: Harness) -> tuple[str, int, str | None]:
    a, _b = h.stable_group("g", 2)
    return a, h.c.groups["g"].generation_id, None


def _completing(h: Harness) -> tuple[str, int, str | None]:
    a, _token = h.join_new("g")  # answered, not synced: CompletingRebalance
    assert h.state("g") == "CompletingRebalance"
    return a, h.c.groups["g"].generation_id, None


def _static(h: Harness) -> tuple[str, int, str | None]:
    token = h.join("g", instance="static-1")
    member = h.reply(token)["member_id"]
    generation = h.reply(token)["generation_id"]
    h.sync("g", member, generation, [(member, b"a")], instance="static-1")
    assert h.state("g") == "Stable"
    return member, generation, "static-1"


def _timers(h: Harness) -> tuple[dict[Any, int], int | None]:
    timers = h.c.membership.timers
    return dict(timers._deadline), timers.next_deadline()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("build", [_stable, _completing, _static])
def test_the_common_case_answers_as_the_general_path(build: Callable[[Harness], Any], version: int) -> None:
    fast, general = Harness(), Harness()
    member, generation, instance = build(fast)
    assert build(general) == (member, generation, instance)
    if instance is not None and version < 3:
        instance = None  # before v3 a static member heartbeats by its member id alone
    for h in (fast, general):
        h.advance(1_000)
    req = _request(version, "g", member, generation, instance)
    body = fast.c.heartbeat_now(fast.now, version, req)
    token = general.call("heartbeat", version, {k: req[k] for k in req})
    assert body is not None
    assert body == general.reply(token)
    assert _timers(fast) == _timers(general)
    # the session it extended expires where the general path's does
    for h in (fast, general):
        h.advance(h.c.groups["g"].members[member].session_timeout_ms - 1)
    assert fast.state("g") == general.state("g")


def _left_to_the_general_path(h: Harness, version: int, req: Any, now: int | None = None) -> None:
    before = _timers(h)
    assert h.c.heartbeat_now(h.now if now is None else now, version, req) is None
    assert _timers(h) == before


@pytest.mark.parametrize("version", [0, 4])
def test_every_other_case_is_left_to_the_general_path(version: int) -> None:
    h = Harness()
    a, b = h.stable_group("g", 2)
    gen = h.c.groups["g"].generation_id
    _left_to_the_general_path(h, version, _request(version, "", a, gen))
    _left_to_the_general_path(h, version, _request(version, "unknown", a, gen))
    _left_to_the_general_path(h, version, _request(version, "g", "stranger", gen))
    _left_to_the_general_path(h, version, _request(version, "g", a, gen + 1))
    # a deadline earlier than the armed one (the clock went back) would need the timer re-armed
    _left_to_the_general_path(h, version, _request(version, "g", a, gen), now=h.now - 5_000)
    h.join_new("g")  # a newcomer: PreparingRebalance
    assert h.state("g") == "PreparingRebalance"
    _left_to_the_general_path(h, version, _request(version, "g", b, gen))


def test_a_static_member_named_by_another_instance_is_left_to_the_general_path() -> None:
    h = Harness()
    member, generation, _ = _static(h)
    _left_to_the_general_path(h, 4, _request(4, "g", member, generation, "static-2"))
    assert h.c.heartbeat_now(h.now, 4, _request(4, "g", member, generation, "static-1")) is not None


def test_an_empty_group_is_left_to_the_general_path() -> None:
    h = Harness()
    (a,) = h.stable_group("g", 1)
    gen = h.c.groups["g"].generation_id
    h.leave("g", [(a, None)])
    assert h.state("g") == "Empty"
    _left_to_the_general_path(h, 4, _request(4, "g", a, gen))
