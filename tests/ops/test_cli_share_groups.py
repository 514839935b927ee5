"""``kbroker share-groups list|describe|reset-offsets|delete`` as a real subprocess against ``python -m broker``,
with our ShareConsumer as the group's member."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from share_helpers import share_broker, unique

from client import Admin, Producer, ShareConsumer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WAIT_S = 60.0


@pytest.fixture(scope="module")
def bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with share_broker(tmp_path_factory.mktemp("share-cli") / "data") as bootstrap:
        yield bootstrap


async def kbroker(bs: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KBROKER_BOOTSTRAP"}
    return await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "kbroker_cli", "-b", bs, *args],
                                   capture_output=True, text=True, timeout=60, env=env)


async def ok(bs: str, *args: str) -> str:
    proc = await kbroker(bs, *args)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return proc.stdout


async def describe(bs: str, group: str) -> dict[str, Any]:
    return json.loads(await ok(bs, "share-groups", "describe", group, "--json"))


async def produce(bs: str, topic: str, values: list[str]) -> None:
    async with Producer(bootstrap_servers=bs) as p:
        for v in values:
            await p.enqueue(topic, v.encode(), partition=0)
        await p.flush()


async def read(sc: ShareConsumer, n: int) -> list[str]:
    got: list[str] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < n:
        assert time.monotonic() < deadline, f"got {got}"
        for records in (await sc.getmany(timeout_ms=500)).values():
            got += [r.value.decode() for r in records if r.value is not None]
    await sc.commit()
    return got


async def test_list_describe_reset_and_delete_a_share_group(bs: str) -> None:
    group, topic = unique("g"), unique("t")
    async with Admin(bootstrap_servers=bs) as admin:
        await admin.create_topics({topic: 1})
        await admin.incremental_alter_configs("group", group, [("set", "share.auto.offset.reset", "earliest")])
    await produce(bs, topic, [f"v{i}" for i in range(5)])

    async with ShareConsumer(topic, bootstrap_servers=bs, group_id=group) as sc:
        assert await read(sc, 5) == [f"v{i}" for i in range(5)]
        await produce(bs, topic, ["v5", "v6"])
        data = await describe(bs, group)
        assert data["state"] == "Stable" and data["assignor"] == "simple"
        assert [(m["member_id"], m["assignment"]) for m in data["members"]] == [(sc.member_id, [f"{topic}-0"])]
        assert data["partitions"] == [{"topic": topic, "partition": 0, "start_offset": 5, "log_end_offset": 7,
                                       "lag": 2}]
        text = await ok(bs, "share-groups", "describe", group)
        assert "START-OFFSET" in text and sc.member_id in text and f"{topic}-0" in text
        assert {"group": group, "state": "Stable"} in json.loads(await ok(bs, "share-groups", "list", "--json"))
        busy = await kbroker(bs, "share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest")
        assert busy.returncode == 1 and "has members" in busy.stderr

    data = await describe(bs, group)
    assert (data["state"], data["members"]) == ("Empty", [])
    await ok(bs, "share-groups", "reset-offsets", group, "--topic", topic, "--to-offset", "3")
    assert (await describe(bs, group))["partitions"][0]["start_offset"] == 3
    await ok(bs, "share-groups", "reset-offsets", group, "--topic", topic, "--to-latest")
    assert (await describe(bs, group))["partitions"][0]["start_offset"] == 7
    out = json.loads(await ok(bs, "share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest", "--json"))
    assert out == [{"topic": topic, "partition": 0, "start_offset": 0}]
    async with ShareConsumer(topic, bootstrap_servers=bs, group_id=group) as sc:
        assert await read(sc, 7) == [f"v{i}" for i in range(7)]  # from the start again

    missing = await kbroker(bs, "share-groups", "describe", unique("nobody"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    await ok(bs, "share-groups", "delete", group)
    assert group not in [g["group"] for g in json.loads(await ok(bs, "share-groups", "list", "--json"))]
    gone = await kbroker(bs, "share-groups", "delete", group)
    assert gone.returncode == 1 and "does not exist" in gone.stderr
