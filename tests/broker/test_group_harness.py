"""Test harness for the pure group coordinator (fake clock; requests and replies checked by the codec).

Every request goes through the real request schema (encode, then decode into the ``Obj`` the
edge will hand over) and every reply is checked against the response schema of its version:
all fields without a default are present, no field from another version leaks in, and the
dict survives an encode/decode round trip.  Each reply token must be answered exactly once.
"""

from __future__ import annotations

import itertools
from typing import Any

from broker.coordinator.group import GroupConfig, GroupCoordinator
from broker.coordinator.group.records import (
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from protocol.schema import MISSING, Message, in_range
from protocol.schemas import (
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)

START = 1_000_000

APIS: dict[str, tuple[int, Message, Message]] = {
    "join": (11, join_group.JoinGroupRequest, join_group.JoinGroupResponse),
    "sync": (14, sync_group.SyncGroupRequest, sync_group.SyncGroupResponse),
    "heartbeat": (12, heartbeat.HeartbeatRequest, heartbeat.HeartbeatResponse),
    "leave": (13, leave_group.LeaveGroupRequest, leave_group.LeaveGroupResponse),
    "commit": (8, offset_commit.OffsetCommitRequest, offset_commit.OffsetCommitResponse),
    "fetch": (9, offset_fetch.OffsetFetchRequest, offset_fetch.OffsetFetchResponse),
    "describe": (15, describe_groups.DescribeGroupsRequest, describe_groups.DescribeGroupsResponse),
    "list": (16, list_groups.ListGroupsRequest, list_groups.ListGroupsResponse),
    "delete": (42, delete_groups.DeleteGroupsRequest, delete_groups.DeleteGroupsResponse),
    "offset_delete": (47, offset_delete.OffsetDeleteRequest, offset_delete.OffsetDeleteResponse),
}


def check_shape(fields: tuple[Any, ...], version: int, obj: dict[str, Any], path: str = "") -> None:
    present = {f.name: f for f in fields if in_range(f.versions, version)}
    for key in obj:
        assert key in present, f"{path}{key} is not a field in this version"
    for name, f in present.items():
        if name not in obj:
            assert f.default is not MISSING, f"{path}{name} missing"
            continue
        if f.type == "[]struct":
            for i, item in enumerate(obj[name] or ()):
                check_shape(f.fields, version, item, f"{path}{name}[{i}].")


class Harness:
    """A coordinator, a fake clock and a mailbox of replies by token."""

    def __init__(self, *, check: bool = True, partition_count: Any = None, auto_commit: bool = True,
                 **config: Any) -> None:
        config.setdefault("initial_rebalance_delay_ms", 0)
        self.now = START
        self._ids = itertools.count()
        self._tokens = itertools.count(1)
        self.config = GroupConfig(**config)
        self.c = GroupCoordinator(self.config, now_ms=self.now, partition_count=partition_count,
                                  member_id_factory=lambda prefix: f"{prefix}-{next(self._ids)}")
        self.replies: dict[int, dict[str, Any]] = {}
        #: records of committed writes, in commit order (what a reload replays)
        self.records: list[tuple[int, bytes, bytes | None]] = []
        #: handed-out writes not completed yet (completed at once when ``auto_commit``)
        self.inflight: list[Any] = []
        self.auto_commit = auto_commit
        self.check = check
        self._expect: dict[int, tuple[Message, int]] = {}
        self.last_fx: Any = None
        #: every reply released by the last call, those of the writes it committed included
        self.last_replies: list[tuple[int, dict[str, Any]]] = []

    # -- driving ---------------------------------------------------------------------------------

    def call(self, api: str, version: int, body: dict[str, Any], **ctx: Any) -> int:
        api_key, req_msg, resp_msg = APIS[api]
        token = next(self._tokens)
        request: Any = body
        if self.check:
            request = req_msg.decode(version, req_msg.encode(version, body))
        self._expect[token] = (resp_msg, version)
        fx = self.c.handle(api_key, self.now, version, request, token, **ctx)
        self._absorb(fx, top=True)
        return token

    def advance(self, ms: int) -> Any:
        self.now += ms
        fx = self.c.poll(self.now)
        self._absorb(fx, top=True)
        return fx

    def commit_write(self, write: Any = None) -> Any:
        """Complete ``write`` (default: the oldest in flight) as durable; returns the effects."""
        return self._complete(write, None, top=True)

    def fail_write(self, error_code: int, write: Any = None) -> Any:
        """Complete ``write`` (default: the oldest in flight) as failed with ``error_code``."""
        return self._complete(write, error_code, top=True)

    def _complete(self, write: Any, error_code: int | None, *, top: bool) -> Any:
        write = self.inflight[0] if write is None else write
        self.inflight.remove(write)
        if error_code is None:
            self.records.extend((write.partition, key, value) for key, value in write.records)
            fx = self.c.write_committed(self.now, write.write_id)
        else:
            fx = self.c.write_failed(self.now, write.write_id, error_code)
        self._absorb(fx, top=top)
        return fx

    def _absorb(self, fx: Any, top: bool = False) -> None:
        if top:
            self.last_fx = fx
            self.last_replies = []
        self.last_replies.extend(fx.replies)
        self.inflight.extend(fx.writes)
        self._check_replies(fx)
        while self.auto_commit and self.inflight:
            self._complete(None, None, top=False)

    def _check_replies(self, fx: Any) -> None:
        for token, resp in fx.replies:
            assert token not in self.replies, f"token {token} answered twice"
            msg, version = self._expect[token]
            if self.check:
                check_shape(msg.fields, version, resp)
                decoded = msg.decode(version, msg.encode(version, resp))
                for key, value in resp.items():
                    if not isinstance(value, list):
                        assert decoded[key] == value, (key, decoded[key], value)
            self.replies[token] = resp

    def reply(self, token: int) -> dict[str, Any] | None:
        return self.replies.get(token)

    def error(self, token: int) -> int:
        resp = self.replies[token]
        return resp["error_code"]

    # -- group API helpers ------------------------------------------------------------------------

    def join(self, group: str, member_id: str = "", *, v: int = 5, instance: str | None = None,
             protocols: Any = (("range", b"meta"),), ptype: str = "consumer", session: int = 10_000,
             rebalance: int = 30_000, client_id: str = "client") -> int:
        body: dict[str, Any] = {
            "group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": rebalance,
            "member_id": member_id, "protocol_type": ptype,
            "protocols": [{"name": n, "metadata": m} for n, m in protocols]}
        if v >= 5:
            body["group_instance_id"] = instance
        return self.call("join", v, body, client_id=client_id, client_host="/10.0.0.1")

    def join_new(self, group: str, *, v: int = 5, **kw: Any) -> tuple[str, int]:
        """Two-step KIP-394 join for a dynamic member; returns (member_id, parked token)."""
        t = self.join(group, v=v, **kw)
        first = self.replies[t]
        if v >= 4 and kw.get("instance") is None:
            assert first["error_code"] == 79, first
            member_id = first["member_id"]
            return member_id, self.join(group, member_id, v=v, **kw)
        return first["member_id"] if first else "", t

    def sync(self, group: str, member_id: str, generation: int, assignments: Any = (), *, v: int = 3,
             instance: str | None = None, ptype: str | None = None, pname: str | None = None) -> int:
        body: dict[str, Any] = {"group_id": group, "generation_id": generation, "member_id": member_id,
                                "assignments": [{"member_id": m, "assignment": a} for m, a in assignments]}
        if v >= 3:
            body["group_instance_id"] = instance
        if v >= 5:
            body["protocol_type"] = ptype
            body["protocol_name"] = pname
        return self.call("sync", v, body)

    def heartbeat(self, group: str, member_id: str, generation: int, *, v: int = 3,
                  instance: str | None = None) -> int:
        body: dict[str, Any] = {"group_id": group, "generation_id": generation, "member_id": member_id}
        if v >= 3:
            body["group_instance_id"] = instance
        return self.error(self.call("heartbeat", v, body))

    def leave(self, group: str, members: Any, *, v: int = 3) -> dict[str, Any]:
        if v >= 3:
            body = {"group_id": group, "members": [{"member_id": m, "group_instance_id": i} for m, i in members]}
        else:
            body = {"group_id": group, "member_id": members}
        return self.replies[self.call("leave", v, body)]

    def commit(self, group: str, offsets: Any, *, generation: int = -1, member_id: str = "", v: int = 7,
               instance: str | None = None, retention: int = -1, epoch: int = -1) -> dict[tuple[str, int], int]:
        """offsets: {(topic, partition): (offset, metadata)}; returns {(topic, partition): error}."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, part), (off, meta) in offsets.items():
            p: dict[str, Any] = {"partition_index": part, "committed_offset": off, "committed_metadata": meta}
            if v >= 6:
                p["committed_leader_epoch"] = epoch
            topics.setdefault(topic, []).append(p)
        body: dict[str, Any] = {"group_id": group, "generation_id_or_member_epoch": generation,
                                "member_id": member_id,
                                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
        if v >= 7:
            body["group_instance_id"] = instance
        if 2 <= v <= 4:
            body["retention_time_ms"] = retention
        resp = self.replies[self.call("commit", v, body)]
        return {(t["name"], p["partition_index"]): p["error_code"] for t in resp["topics"] for p in t["partitions"]}

    def describe(self, *groups: str, v: int = 5) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"groups": list(groups)}
        if v >= 3:
            body["include_authorized_operations"] = False
        return self.replies[self.call("describe", v, body)]["groups"]

    def state(self, group: str) -> str:
        return self.describe(group)[0]["group_state"]

    def stable_group(self, group: str, n: int, *, v: int = 5, **kw: Any) -> list[str]:
        """Bring ``n`` dynamic members to Stable; returns member ids (leader first)."""
        tokens = []
        for _ in range(n):
            mid, tok = self.join_new(group, v=v, **kw)
            tokens.append((mid, tok))
        # members answered by an earlier (smaller) generation rejoin the running rebalance
        if self.c.groups[group].state.value == "PreparingRebalance":
            tokens = [(m, self.join(group, m, v=v, **kw) if self.reply(t) is not None else t) for m, t in tokens]
        if self.config.initial_rebalance_delay_ms:
            self.advance(self.config.initial_rebalance_delay_ms * 20)
        assert len({self.reply(t)["generation_id"] for _, t in tokens}) == 1
        gen = self.reply(tokens[0][1])["generation_id"]
        leader = self.reply(tokens[0][1])["leader"]
        ids = [m for m, _ in tokens]
        sync_tokens = [self.sync(group, m, gen, [(x, x.encode()) for x in ids] if m == leader else ())
                       for m in ids]
        assert all(self.error(t) == 0 for t in sync_tokens)
        return sorted(ids, key=lambda m: m != leader)

    # -- records ----------------------------------------------------------------------------------

    def decoded_records(self) -> list[tuple[Any, Any]]:
        out = []
        for _, key, value in self.records:
            k = decode_key(key)
            if value is None:
                out.append((k, None))
            elif k.record_type == 2:
                out.append((k, decode_group_metadata_value(value)))
            else:
                out.append((k, decode_offset_commit_value(value)))
        return out
