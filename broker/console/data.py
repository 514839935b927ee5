"""ConsoleData: the facts each console page shows, and its actions.

The cluster's shape (brokers, topics, partitions, leaders, ISRs, reassignments) is read from the
metadata image every broker keeps.  Everything else goes through Kafka requests made as the
logged-in principal (:attr:`ConsoleSources.request`): the same handlers, authorization pass and admin
services a Kafka client's requests go through, so ACLs apply identically — DESCRIBE on a topic to
see it, READ to browse its records, DESCRIBE on a group, and Kafka's rules for each action
(CreateTopics, CreatePartitions, IncrementalAlterConfigs, DeleteRecords, DeleteTopics, OffsetCommit,
AlterShareGroupOffsets, DeleteGroups).  Share groups (KIP-932) are described with ShareGroupDescribe and
DescribeShareGroupOffsets, as ``kafka-share-groups.sh`` does.  A request for a partition's leader or a group's coordinator on another broker is
authorized here and answered there.  The logs this broker hosts give their offsets and sizes directly.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from broker.cluster.internal_topics import is_internal_topic
from broker.console.sources import ConsoleSettings, ConsoleSources
from broker.security.acl import AclOperation, AuthorizationSession, ResourceType
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj
from protocol.records import CorruptRecordError, Record, decode_record_set

__all__ = ["ActionError", "ConsoleData", "Facts", "RecordQuery"]

log = logging.getLogger("kbroker.console")

E = ErrorCode
_TOPIC_RESOURCE = 2  # ConfigResource.Type TOPIC
_CONFIG_SOURCES = {0: "unknown", 1: "topic override", 2: "broker (dynamic)", 3: "cluster default (dynamic)",
                   4: "broker setting", 5: "default", 6: "broker logger", 7: "client metrics", 8: "group"}
_LATEST, _EARLIEST = -1, -2


class ActionError(Exception):
    """An action or a query that cannot be done: the message says why, in words for the page."""


def error_text(code: int, message: str | None = None) -> str:
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error {code}"
    return f"{name}: {message}" if message else name


@dataclass(slots=True)
class Facts:
    """A partition's log, as far as known: from the replica hosted here or from its leader."""

    start: int | None = None
    end: int | None = None
    size: int | None = None


@dataclass(slots=True)
class RecordQuery:
    """What the record browser was asked: ``partition`` None for all; ``mode`` newest, offset or timestamp."""

    partition: int | None = None
    mode: str = "newest"
    count: int = 20
    offset: int | None = None
    timestamp_ms: int | None = None


@dataclass(slots=True)
class BrowsedRecord:
    partition: int
    record: Record


@dataclass(slots=True)
class BrowseResult:
    records: list[BrowsedRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ConsoleData:
    def __init__(self, sources: ConsoleSources, settings: ConsoleSettings) -> None:
        self.sources = sources
        self.settings = settings
        self._sizes: dict[str | None, tuple[float, dict[tuple[str, int], int]]] = {}
        #: (image revision, live brokers) -> the cluster's facts: one pass over the partitions per change,
        #: however many pages are open
        self._cluster: tuple[Any, dict[str, Any], list[Any]] | None = None

    @property
    def image(self) -> Any:
        return self.sources.image()

    async def _request(self, authz: AuthorizationSession | None, node: int | None, api: int, version: int,
                       body: dict[str, Any]) -> Obj:
        """A Kafka request as the principal, answered by ``node`` (None or this broker: here)."""
        here = node is None or node == self.sources.node_id
        try:
            return await self.sources.request(authz, None if here else node, api, version, body)
        except (TimeoutError, ConnectionError, OSError) as exc:
            raise ActionError(f"broker {node} did not answer ({exc or type(exc).__name__})") from None

    # -- the cluster (the image) ---------------------------------------------------------------------
    @staticmethod
    def may(authz: AuthorizationSession | None, op: AclOperation, resource: ResourceType, name: str) -> bool:
        return authz is None or authz.authorize(op, resource, name)

    def topics(self, authz: AuthorizationSession | None, *, internal: bool = True, text: str = "") -> list[Any]:
        """The topics the principal may DESCRIBE, by name (``text``: names containing it)."""
        needle = text.lower()
        out = []
        for name, topic in sorted(self.image.topics.items()):
            if (not internal and is_internal_topic(name)) or (needle and needle not in name.lower()):
                continue
            if self.may(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                out.append(topic)
        return out

    def topic(self, authz: AuthorizationSession | None, name: str) -> Any:
        topic = self.image.topic(name)
        if topic is None or not self.may(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            return None  # a topic the principal may not describe is not there for them (as in Metadata)
        return topic

    def cluster(self) -> dict[str, Any]:
        """The overview's and the brokers page's facts, from the image."""
        return self._cluster_facts()[0]

    def under_replicated(self, limit: int) -> list[Any]:
        """Partitions without a live leader, or with a replica out of sync or down (at most ``limit``)."""
        return self._cluster_facts()[1][:limit]

    def _cluster_facts(self) -> tuple[dict[str, Any], list[Any]]:
        image = self.image
        key = (image.revision, tuple(sorted(image.brokers)), image.controller_id)
        if self._cluster is None or self._cluster[0] != key:
            self._cluster = (key, *self._compute_cluster(image))
        return self._cluster[1], self._cluster[2]

    def _compute_cluster(self, image: Any) -> tuple[dict[str, Any], list[Any]]:
        alive = set(image.brokers)
        known = set(alive)
        leaders: dict[int, int] = {}
        replicas: dict[int, int] = {}
        under: dict[int, int] = {}
        offline = under_replicated = reassigning = partitions = 0
        problems: list[Any] = []
        for p in image.partitions():
            partitions += 1
            known.update(p.replicas)
            for r in p.replicas:
                replicas[r] = replicas.get(r, 0) + 1
            if p.leader >= 0 and p.leader in alive:
                leaders[p.leader] = leaders.get(p.leader, 0) + 1
            else:
                offline += 1
            lacking = len(p.isr) < len(p.replicas) or any(r not in alive for r in p.isr)
            if (lacking or p.leader not in alive) and len(problems) < 1000:
                problems.append(p)
            if lacking:
                under_replicated += 1
                for r in p.replicas:
                    if r not in p.isr or r not in alive:
                        under[r] = under.get(r, 0) + 1
            if p.record.reassigning:
                reassigning += 1
        controller = image.controller_id
        brokers = []
        for node in sorted(known):
            reg = image.brokers.get(node)
            brokers.append({
                "id": node, "alive": node in alive, "controller": node == controller, "rack": reg.rack if reg else None,
                "endpoints": [f"{ep.listener} {ep.host}:{ep.port}" for ep in reg.endpoints] if reg else [],
                "address": f"{reg.endpoints[0].host}:{reg.endpoints[0].port}" if reg and reg.endpoints else "—",
                "leaders": leaders.get(node, 0), "replicas": replicas.get(node, 0),
                "missing": under.get(node, 0), "shutting_down": bool(reg and reg.shutting_down),
                "this": node == self.sources.node_id})
        return {"cluster_id": self.sources.cluster_id(), "controller": controller, "brokers": brokers,
                "topics": len(image.topics), "partitions": partitions, "offline": offline,
                "under_replicated": under_replicated, "reassigning": reassigning,
                "node_id": self.sources.node_id}, problems

    # -- partition offsets and sizes ----------------------------------------------------------------
    async def facts(self, authz: AuthorizationSession | None, topic: str, partitions: Sequence[int]) -> dict[int, Facts]:
        """Start and end offsets and size of ``partitions`` of ``topic``: from the replicas hosted here, else
        ListOffsets at their leaders (sizes from DescribeLogDirs, when the principal may describe the cluster)."""
        out: dict[int, Facts] = {}
        remote: dict[int, list[int]] = {}
        image = self.image
        for p in partitions:
            local = self.sources.local_partition(topic, p)
            part = image.partition(topic, p)
            if local is not None and (local.is_leader or part is None or part.leader not in image.brokers):
                out[p] = Facts(local.log_start_offset, local.high_watermark, local.size_bytes)
            elif part is not None and part.leader in image.brokers:
                remote.setdefault(part.leader, []).append(p)
                out[p] = Facts(size=(await self._sizes_of(authz, part.leader)).get((topic, p)))
            else:
                out[p] = Facts(size=local.size_bytes if local else None)
        for node, parts in remote.items():
            for ts, attr in ((_EARLIEST, "start"), (_LATEST, "end")):
                try:
                    offsets = await self.list_offsets(authz, node, topic, {p: ts for p in parts})
                except ActionError:
                    continue
                for p, (offset, _) in offsets.items():
                    setattr(out[p], attr, offset)
        return out

    async def _sizes_of(self, authz: AuthorizationSession | None, node: int) -> dict[tuple[str, int], int]:
        """The partition sizes broker ``node`` reports (DescribeLogDirs), remembered for a refresh period."""
        key = f"{node}:{authz.principal if authz is not None else ''}"
        cached = self._sizes.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self.settings.refresh_ms / 1000:
            return cached[1]
        sizes: dict[tuple[str, int], int] = {}
        try:
            resp = await self._request(authz, node, ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
            for result in resp["results"] or []:
                for t in result["topics"] or []:
                    for part in t["partitions"] or []:
                        sizes[(t["name"], part["partition_index"])] = part["partition_size"]
        except ActionError:
            pass
        if len(self._sizes) > 64:
            self._sizes.clear()
        self._sizes[key] = (now, sizes)
        return sizes

    async def topic_sizes(self, authz: AuthorizationSession | None, topics: Iterable[Any]) -> dict[str, int | None]:
        """Each topic's size: the sum of its partitions' leader replicas (None when one is unknown)."""
        image = self.image
        out: dict[str, int | None] = {}
        for topic in topics:
            total: int | None = 0
            for p, part in topic.partitions.items():
                local = self.sources.local_partition(topic.name, p)
                size: int | None
                if local is not None and (local.is_leader or part.leader not in image.brokers):
                    size = local.size_bytes
                elif part.leader in image.brokers:
                    size = (await self._sizes_of(authz, part.leader)).get((topic.name, p))
                else:
                    size = None
                total = None if total is None or size is None else total + size
            out[topic.name] = total
        return out

    async def list_offsets(self, authz: AuthorizationSession | None, node: int | None, topic: str,
                           timestamps: dict[int, int]) -> dict[int, tuple[int, int]]:
        """ListOffsets at ``node``: partition -> (offset, timestamp); ActionError for a refused or failed one."""
        resp = await self._request(authz, node, ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "current_leader_epoch": -1, "timestamp": ts} for p, ts in timestamps.items()]}]})
        out = {}
        for t in resp["topics"] or []:
            for part in t["partitions"] or []:
                if part["error_code"]:
                    raise ActionError(f"partition {part['partition_index']}: {error_text(part['error_code'])}")
                out[part["partition_index"]] = (part["offset"], part["timestamp"])
        return out

    def _leader(self, topic: str, partition: int) -> int:
        part = self.image.partition(topic, partition)
        if part is None:
            raise ActionError(f"{topic} has no partition {partition}")
        if part.leader not in self.image.brokers:
            raise ActionError(f"partition {partition} of {topic} has no live leader")
        return int(part.leader)

    # -- configs -----------------------------------------------------------------------------------------
    async def topic_configs(self, authz: AuthorizationSession | None, topic: str) -> tuple[list[dict[str, Any]], str]:
        """The topic's configs with their sources (DescribeConfigs), and an error text ('' when none)."""
        resp = await self._request(authz, None, ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": _TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": True})
        result = (resp["results"] or [None])[0]
        if result is None:
            return [], "no answer"
        if result["error_code"]:
            return [], error_text(result["error_code"], result.get("error_message"))
        configs = [{"name": c["name"], "value": None if c["is_sensitive"] else c["value"],
                    "sensitive": c["is_sensitive"], "read_only": c["read_only"],
                    "source": _CONFIG_SOURCES.get(c["config_source"], str(c["config_source"])),
                    "doc": c.get("documentation") or ""} for c in result["configs"] or []]
        return sorted(configs, key=lambda c: c["name"]), ""

    # -- records ------------------------------------------------------------------------------------------
    async def browse(self, authz: AuthorizationSession | None, topic: str, q: RecordQuery) -> BrowseResult:
        """The records asked for, newest first for ``newest``, else in offset order (per partition, then
        merged by timestamp when several).  Bad offsets and timestamps are said in ``notes``."""
        t = self.image.topic(topic)
        result = BrowseResult()
        if t is None:
            raise ActionError(f"no topic {topic}")
        count = max(1, min(q.count, self.settings.records_max))
        if q.partition is not None:
            if q.partition not in t.partitions:
                raise ActionError(f"{topic} has no partition {q.partition} (it has {t.partition_count})")
            partitions = [q.partition]
        else:
            partitions = sorted(t.partitions)
            if len(partitions) > self.settings.page_size:
                result.notes.append(f"all partitions: the first {self.settings.page_size} of {len(partitions)} "
                                    "are read; pick a partition to read another")
                partitions = partitions[:self.settings.page_size]
        if q.mode == "offset" and (q.offset is None or q.offset < 0):
            raise ActionError("give an offset: a whole number, 0 or more")
        if q.mode == "timestamp" and q.timestamp_ms is None:
            raise ActionError("give a timestamp: milliseconds since 1970, or a date and time")
        facts = await self.facts(authz, topic, partitions)
        per_partition = count
        jobs = []
        for p in partitions:
            f = facts[p]
            if f.start is None or f.end is None:
                result.notes.append(f"partition {p}: its offsets are not known here (no live leader?)")
                continue
            if q.mode == "newest":
                start = max(f.start, f.end - per_partition)
            elif q.mode == "offset":
                assert q.offset is not None
                if q.offset >= f.end or q.offset < f.start:
                    if q.partition is not None or q.offset >= f.end:
                        result.notes.append(f"partition {p}: offset {q.offset} is outside the log "
                                            f"({f.start} to {f.end - 1})" if f.end > f.start else
                                            f"partition {p}: offset {q.offset}: the partition holds no records")
                    if q.offset >= f.end:
                        continue
                start = max(q.offset, f.start)
            else:
                assert q.timestamp_ms is not None
                try:
                    found = await self.list_offsets(authz, self._leader(topic, p), topic, {p: q.timestamp_ms})
                except ActionError as exc:
                    result.notes.append(str(exc))
                    continue
                start = found.get(p, (-1, -1))[0]
                if start < 0:
                    result.notes.append(f"partition {p}: no record at or after that time")
                    continue
            if start < f.end:
                jobs.append((p, start, f.end))
        fetched = await asyncio.gather(*(self._read(authz, topic, p, start, end, per_partition)
                                         for p, start, end in jobs), return_exceptions=True)
        for (p, _, _), got in zip(jobs, fetched, strict=True):
            if isinstance(got, BaseException):
                if not isinstance(got, ActionError):
                    raise got
                result.notes.append(f"partition {p}: {got}")
                continue
            result.records.extend(BrowsedRecord(p, r) for r in got)
        if q.mode == "newest":
            result.records.sort(key=lambda br: (br.record.timestamp, br.record.offset), reverse=True)
        elif len(partitions) > 1:
            result.records.sort(key=lambda br: (br.record.timestamp, br.partition, br.record.offset))
        del result.records[count:]
        return result

    async def _read(self, authz: AuthorizationSession | None, topic: str, partition: int, start: int, end: int,
                    count: int) -> list[Record]:
        """Up to ``count`` records of one partition from ``start`` (Fetch at its leader, as the principal)."""
        node = self._leader(topic, partition)
        records: list[Record] = []
        offset = start
        for _ in range(8):  # a few fetches at most: large records take more than one
            resp = await self._request(authz, node, ApiKey.FETCH, 12, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 4 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                     "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [], "rack_id": ""})
            if resp.get("error_code"):
                raise ActionError(error_text(resp["error_code"]))
            part = resp["responses"][0]["partitions"][0]
            if part["error_code"]:
                raise ActionError(error_text(part["error_code"]))
            data = part["records"]
            if not data:
                break
            try:
                batch = [r for r in decode_record_set(data) if r.offset >= offset]
            except CorruptRecordError as exc:
                raise ActionError(f"records at {offset} do not decode: {exc}") from None
            if not batch:
                break
            records.extend(batch)
            offset = batch[-1].offset + 1
            if len(records) >= count or offset >= end:
                break
        return records[:count]

    # -- groups --------------------------------------------------------------------------------------------
    async def groups(self, authz: AuthorizationSession | None, text: str = "") -> tuple[list[dict[str, Any]], list[str]]:
        """Every group of the cluster the principal may DESCRIBE (ListGroups at each live broker), and notes
        about brokers that did not answer."""
        notes: list[str] = []
        found: dict[str, dict[str, Any]] = {}

        async def ask(node: int) -> None:
            try:
                resp = await self._request(authz, node, ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
            except ActionError as exc:
                notes.append(str(exc))
                return
            if resp["error_code"] and resp["error_code"] != E.COORDINATOR_LOAD_IN_PROGRESS:
                notes.append(f"broker {node}: {error_text(resp['error_code'])}")
            for g in resp["groups"] or []:
                found[g["group_id"]] = {"id": g["group_id"], "state": g.get("group_state") or "",
                                        "type": g.get("group_type") or "classic",
                                        "protocol": g.get("protocol_type") or ""}

        await asyncio.gather(*(ask(node) for node in sorted(self.image.brokers)))
        needle = text.lower()
        return [found[g] for g in sorted(found) if not needle or needle in g.lower()], notes

    async def coordinators(self, authz: AuthorizationSession | None, groups: Sequence[str]) -> dict[str, int | str]:
        """group -> its coordinator's node id, or the error text of FindCoordinator."""
        if not groups:
            return {}
        resp = await self._request(authz, None, ApiKey.FIND_COORDINATOR, 4,
                                   {"key_type": 0, "coordinator_keys": list(groups)})
        out: dict[str, int | str] = {}
        for c in resp["coordinators"] or []:
            out[c["key"]] = error_text(c["error_code"], c.get("error_message")) if c["error_code"] else c["node_id"]
        return out

    async def _coordinator(self, authz: AuthorizationSession | None, group: str) -> int:
        node = (await self.coordinators(authz, [group])).get(group, "no coordinator")
        if isinstance(node, str):
            raise ActionError(node)
        return node

    async def describe_group(self, authz: AuthorizationSession | None, group: str) -> dict[str, Any]:
        """A group's state, protocol and members with their assignments: ConsumerGroupDescribe for a KIP-848
        group, ShareGroupDescribe for a share group, DescribeGroups for a classic one.  ActionError when it
        cannot be described."""
        node = await self._coordinator(authz, group)
        resp = await self._request(authz, node, ApiKey.CONSUMER_GROUP_DESCRIBE, 0,
                                   {"group_ids": [group], "include_authorized_operations": False})
        g = (resp["groups"] or [None])[0]
        if g is not None and not g["error_code"]:
            members = []
            for m in g["members"] or []:
                assigned = sorted((tp["topic_name"], p) for tp in (m["assignment"] or {}).get("topic_partitions") or []
                                  for p in tp["partitions"])
                members.append({"id": m["member_id"], "instance": m.get("instance_id"), "client_id": m["client_id"],
                                "host": m["client_host"], "assignment": assigned,
                                "subscription": ", ".join(m.get("subscribed_topic_names") or [])
                                or (m.get("subscribed_topic_regex") or "")})
            return {"id": group, "type": "consumer", "state": g["group_state"], "protocol": "consumer",
                    "detail": f"group epoch {g['group_epoch']}, assignor {g['assignor_name'] or '—'}",
                    "members": members, "coordinator": node}
        if g is not None and g["error_code"] == E.GROUP_AUTHORIZATION_FAILED:
            raise ActionError(error_text(g["error_code"]))
        share = await self._describe_share_group(authz, node, group)
        if share is not None:
            return share
        resp = await self._request(authz, node, ApiKey.DESCRIBE_GROUPS, 5,
                                   {"groups": [group], "include_authorized_operations": False})
        g = (resp["groups"] or [None])[0]
        if g is None:
            raise ActionError("no answer")
        if g["error_code"]:
            raise ActionError(error_text(g["error_code"], g.get("error_message")))
        if g["group_state"] == "Dead":
            raise ActionError(f"no group {group!r}")
        members = []
        for m in g["members"] or []:
            assigned: list[tuple[str, int]] = []
            if g["protocol_type"] == "consumer" and m["member_assignment"]:
                try:
                    from client.assignors import decode_assignment

                    assigned = sorted((tp.topic, tp.partition) for tp in
                                      decode_assignment(bytes(m["member_assignment"])).partitions)
                except Exception:  # a client's own bytes: shown as undecodable, never trusted
                    assigned = []
            members.append({"id": m["member_id"], "instance": m.get("group_instance_id"), "client_id": m["client_id"],
                            "host": m["client_host"], "assignment": assigned, "subscription": ""})
        return {"id": group, "type": "classic", "state": g["group_state"], "protocol": g["protocol_type"] or "—",
                "detail": f"assignor {g['protocol_data'] or '—'}", "members": members, "coordinator": node}

    async def _describe_share_group(self, authz: AuthorizationSession | None, node: int,
                                    group: str) -> dict[str, Any] | None:
        """A share group (KIP-932) as ``kafka-share-groups.sh --describe`` shows it (ShareGroupDescribe): None
        when ``group`` is not a share group; ActionError when it may not be described (DESCRIBE on the group,
        and on every topic its members subscribe to or are assigned)."""
        resp = await self._request(authz, node, ApiKey.SHARE_GROUP_DESCRIBE, 1,
                                   {"group_ids": [group], "include_authorized_operations": False})
        g = (resp["groups"] or [None])[0]
        if g is None or g["error_code"] in (E.GROUP_ID_NOT_FOUND, E.UNSUPPORTED_VERSION):
            return None
        if g["error_code"]:
            raise ActionError(error_text(g["error_code"], g.get("error_message")))
        members = [{"id": m["member_id"], "instance": None, "client_id": m["client_id"], "host": m["client_host"],
                    "assignment": sorted((tp["topic_name"], p) for tp in (m["assignment"] or {}).get(
                        "topic_partitions") or [] for p in tp["partitions"]),
                    "subscription": ", ".join(sorted(m.get("subscribed_topic_names") or []))}
                   for m in g["members"] or []]
        return {"id": group, "type": "share", "state": g["group_state"], "protocol": "share",
                "detail": f"group epoch {g['group_epoch']}, assignment epoch {g['assignment_epoch']}, "
                          f"assignor {g['assignor_name'] or '—'}", "members": members, "coordinator": node}

    async def _per_coordinator(self, authz: AuthorizationSession | None, groups: Sequence[str],
                               failed: dict[str, Any], api: int, version: int, **extra: Any) -> list[Any]:
        """One request of ``api`` (``groups``: each group, all its topics) to each coordinator of ``groups``:
        the answers of the groups without an error; the others get their error text in ``failed``."""
        coordinators = await self.coordinators(authz, groups)
        by_node: dict[int, list[str]] = {}
        for g in groups:
            node = coordinators.get(g, "no coordinator")
            if isinstance(node, str):
                failed[g] = node
            else:
                by_node.setdefault(node, []).append(g)
        answers = []
        for node, names in by_node.items():
            try:
                resp = await self._request(authz, node, api, version,
                                           {"groups": [{"group_id": g, "topics": None} for g in names], **extra})
            except ActionError as exc:
                for g in names:
                    failed[g] = str(exc)
                continue
            for entry in resp["groups"] or []:
                if entry["error_code"]:
                    failed[entry["group_id"]] = error_text(entry["error_code"], entry.get("error_message"))
                else:
                    answers.append(entry)
        return answers

    async def share_group_offsets(self, authz: AuthorizationSession | None, groups: Sequence[str]
                                  ) -> dict[str, list[dict[str, Any]] | str]:
        """Each share group's start offset and lag per partition, as ``kafka-share-groups.sh --describe``
        shows them (DescribeShareGroupOffsets v1 at the coordinators: the topics the principal may
        DESCRIBE), or the error text."""
        out: dict[str, list[dict[str, Any]] | str] = {}
        for entry in await self._per_coordinator(authz, groups, out, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1):
            out[entry["group_id"]] = sorted((
                {"topic": t["topic_name"], "partition": p["partition_index"],
                 "start": p["start_offset"] if p["start_offset"] >= 0 else None,
                 "lag": p["lag"] if p["lag"] >= 0 else None,
                 "error": error_text(p["error_code"], p.get("error_message")) if p["error_code"] else ""}
                for t in entry["topics"] or [] for p in t["partitions"] or []),
                key=lambda r: (r["topic"], r["partition"]))
        return out

    async def group_offsets(self, authz: AuthorizationSession | None, groups: Sequence[str]
                            ) -> dict[str, list[dict[str, Any]] | str]:
        """Each group's committed offsets with the partitions' end offsets and lag (OffsetFetch at the
        coordinators, end offsets from the leaders), or the error text."""
        out: dict[str, list[dict[str, Any]] | str] = {}
        committed: dict[str, list[tuple[str, int, int]]] = {}
        for entry in await self._per_coordinator(authz, groups, out, ApiKey.OFFSET_FETCH, 8, require_stable=False):
            committed[entry["group_id"]] = [(t["name"], p["partition_index"], p["committed_offset"])
                                            for t in entry["topics"] or [] for p in t["partitions"] or []
                                            if p["committed_offset"] >= 0]
        ends: dict[tuple[str, int], int | None] = {}
        wanted: dict[str, set[int]] = {}
        for rows in committed.values():
            for topic, p, _ in rows:
                wanted.setdefault(topic, set()).add(p)
        for topic, parts in wanted.items():
            if self.topic(authz, topic) is None:
                continue
            facts = await self.facts(authz, topic, sorted(p for p in parts if self.image.partition(topic, p)))
            for p, f in facts.items():
                ends[(topic, p)] = f.end
        for g, rows in committed.items():
            out[g] = [{"topic": t, "partition": p, "committed": c, "end": ends.get((t, p)),
                       "lag": None if ends.get((t, p)) is None else max(0, (ends[(t, p)] or 0) - c)}
                      for t, p, c in sorted(rows)]
        return out

    # -- actions (each one Kafka request as the principal) -----------------------------------------------
    async def create_topic(self, authz: AuthorizationSession | None, name: str, partitions: int, rf: int,
                           configs: dict[str, str]) -> None:
        resp = await self._request(authz, None, ApiKey.CREATE_TOPICS, 5, {"topics": [{
            "name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in configs.items()]}], "timeout_ms": 30_000,
            "validate_only": False})
        t = resp["topics"][0]
        if t["error_code"]:
            raise ActionError(error_text(t["error_code"], t.get("error_message")))

    async def add_partitions(self, authz: AuthorizationSession | None, topic: str, count: int) -> None:
        resp = await self._request(authz, None, ApiKey.CREATE_PARTITIONS, 3, {
            "topics": [{"name": topic, "count": count, "assignments": None}], "timeout_ms": 30_000,
            "validate_only": False})
        r = resp["results"][0]
        if r["error_code"]:
            raise ActionError(error_text(r["error_code"], r.get("error_message")))

    async def alter_config(self, authz: AuthorizationSession | None, topic: str, name: str, value: str | None) -> None:
        resp = await self._request(authz, None, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": _TOPIC_RESOURCE, "resource_name": topic, "configs": [
                {"name": name, "config_operation": 0 if value is not None else 1, "value": value}]}],
            "validate_only": False})
        r = resp["responses"][0]
        if r["error_code"]:
            raise ActionError(error_text(r["error_code"], r.get("error_message")))

    async def delete_records(self, authz: AuthorizationSession | None, topic: str, partition: int, offset: int) -> int:
        """Delete the records of a partition before ``offset`` (-1: all); returns the new log start."""
        resp = await self._request(authz, self._leader(topic, partition), ApiKey.DELETE_RECORDS, 2, {
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
            "timeout_ms": 30_000})
        p = resp["topics"][0]["partitions"][0]
        if p["error_code"]:
            raise ActionError(error_text(p["error_code"]))
        return int(p["low_watermark"])

    async def delete_topic(self, authz: AuthorizationSession | None, topic: str) -> None:
        resp = await self._request(authz, None, ApiKey.DELETE_TOPICS, 5, {"topic_names": [topic], "timeout_ms": 30_000})
        r = resp["responses"][0]
        if r["error_code"]:
            raise ActionError(error_text(r["error_code"], r.get("error_message")))

    async def delete_group(self, authz: AuthorizationSession | None, group: str) -> None:
        node = await self._coordinator(authz, group)
        resp = await self._request(authz, node, ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
        r = resp["results"][0]
        if r["error_code"]:
            raise ActionError(error_text(r["error_code"]))

    async def reset_offsets(self, authz: AuthorizationSession | None, group: str, strategy: str,
                            value: int | None, topic: str | None) -> int:
        """Commit new offsets for an empty group (OffsetCommit as an admin client does: no generation; a share
        group's start offsets with AlterShareGroupOffsets): ``strategy`` earliest, latest, timestamp (``value``
        ms) or offset (``value``, kept within the log), for ``topic`` or every topic the group has offsets
        of.  Returns the partitions reset."""
        described = await self.describe_group(authz, group)
        share = described["type"] == "share"
        if described["members"] or described["state"] not in ("Empty", "Dead", ""):
            raise ActionError(f"the group is {described['state']} with {len(described['members'])} member(s): "
                              "offsets can be reset only while it is empty (stop its consumers first)")
        if strategy in ("timestamp", "offset") and value is None:
            raise ActionError(f"give the {strategy}")
        if strategy not in ("earliest", "latest", "timestamp", "offset"):
            raise ActionError("choose earliest, latest, timestamp or offset")
        if topic:
            t = self.topic(authz, topic)
            if t is None:
                raise ActionError(f"no topic {topic}")
            targets = {topic: sorted(t.partitions)}
        else:
            current = (await (self.share_group_offsets if share else self.group_offsets)(authz, [group])).get(group)
            if isinstance(current, str):
                raise ActionError(current)
            targets = {}
            for row in current or []:
                targets.setdefault(row["topic"], []).append(row["partition"])
            if not targets:
                raise ActionError("the group has no committed offsets: name a topic to reset")
        new: dict[str, dict[int, int]] = {}
        for name, parts in targets.items():
            facts = await self.facts(authz, name, parts)
            chosen: dict[int, int] = {}
            for p in parts:
                f = facts[p]
                if f.start is None or f.end is None:
                    raise ActionError(f"{name}-{p}: its offsets are not known (no live leader?)")
                if strategy == "earliest":
                    chosen[p] = f.start
                elif strategy == "latest":
                    chosen[p] = f.end
                elif strategy == "offset":
                    assert value is not None
                    chosen[p] = min(max(value, f.start), f.end)
                else:
                    assert value is not None
                    found = await self.list_offsets(authz, self._leader(name, p), name, {p: value})
                    offset = found.get(p, (-1, -1))[0]
                    chosen[p] = f.end if offset < 0 else offset
            new[name] = chosen
        node = await self._coordinator(authz, group)
        if share:
            return await self._alter_share_offsets(authz, node, group, new)
        resp = await self._request(authz, node, ApiKey.OFFSET_COMMIT, 8, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1, "topics": [{"name": name, "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1, "committed_metadata": ""}
                for p, o in sorted(parts.items())]} for name, parts in new.items()]})
        errors = [f"{t['name']}-{p['partition_index']}: {error_text(p['error_code'])}"
                  for t in resp["topics"] or [] for p in t["partitions"] or [] if p["error_code"]]
        if errors:
            raise ActionError("; ".join(errors[:5]))
        return sum(len(parts) for parts in new.values())

    async def _alter_share_offsets(self, authz: AuthorizationSession | None, node: int, group: str,
                                   new: dict[str, dict[int, int]]) -> int:
        resp = await self._request(authz, node, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {
            "group_id": group, "topics": [{"topic_name": name, "partitions": [
                {"partition_index": p, "start_offset": o} for p, o in sorted(parts.items())]}
                for name, parts in new.items()]})
        if resp["error_code"]:
            raise ActionError(error_text(resp["error_code"], resp.get("error_message")))
        errors = [f"{t['topic_name']}-{p['partition_index']}: {error_text(p['error_code'], p.get('error_message'))}"
                  for t in resp["responses"] or [] for p in t["partitions"] or [] if p["error_code"]]
        if errors:
            raise ActionError("; ".join(errors[:5]))
        return sum(len(parts) for parts in new.values())

    # -- security ------------------------------------------------------------------------------------------
    async def users(self, authz: AuthorizationSession | None) -> tuple[list[dict[str, Any]], str]:
        resp = await self._request(authz, None, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        if resp["error_code"]:
            return [], error_text(resp["error_code"], resp.get("error_message"))
        return [{"name": r["user"], "mechanisms": ", ".join(
            f"{'SCRAM-SHA-256' if c['mechanism'] == 1 else 'SCRAM-SHA-512'} ({c['iterations']} iterations)"
            for c in r["credential_infos"] or [])} for r in sorted(resp["results"] or [], key=lambda r: r["user"])
            if not r["error_code"]], ""

    async def acls(self, authz: AuthorizationSession | None) -> tuple[list[dict[str, Any]], str]:
        resp = await self._request(authz, None, ApiKey.DESCRIBE_ACLS, 3, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
        if resp["error_code"]:
            return [], error_text(resp["error_code"], resp.get("error_message"))
        rows = []
        for r in resp["resources"] or []:
            for a in r["acls"] or []:
                rows.append({"resource": _name(ResourceType, r["resource_type"]), "name": r["resource_name"],
                             "pattern": _PATTERNS.get(r["pattern_type"], str(r["pattern_type"])),
                             "principal": a["principal"], "host": a["host"],
                             "operation": _name(AclOperation, a["operation"]),
                             "permission": {2: "DENY", 3: "ALLOW"}.get(a["permission_type"], str(a["permission_type"]))})
        return sorted(rows, key=lambda r: (r["resource"], r["name"], r["principal"], r["operation"])), ""


_PATTERNS = {3: "LITERAL", 4: "PREFIXED"}


def _name(enum: Any, value: int) -> str:
    try:
        return str(enum(value).name)
    except ValueError:
        return str(value)
