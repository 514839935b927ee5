"""Kafka's partition reassignment JSON and the bookkeeping of its reassignment tool, without I/O.

What ``kbroker cluster reassign`` / ``rebalance`` / ``decommission`` share with
``kafka-reassign-partitions.sh``:

* the plan file: ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,4],
  "log_dirs":["any","any","any"]}]}`` (:func:`parse_plan`, :func:`format_plan`); a missing version
  is 1 and any other version is refused, as Kafka's tool does;
* which replicas a reassignment throttles (:func:`partition_moves`, :func:`throttle_lists`): the
  leader list names every source replica ``partition:broker``, the follower list every destination
  that is not a source, and the rates go on every broker involved;
* the lines ``--verify``, ``--list`` and ``--execute`` print, in Kafka's words.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from client.types import PartitionReassignment, TopicPartition
from kbroker_cli.common import partition_label

#: Kafka's reassignment JSON version (the only one there is)
PLAN_VERSION = 1
ANY_LOG_DIR = "any"

CANNOT_EXECUTE_MESSAGE = ("Cannot execute because there is an existing partition assignment.  Use --additional to "
                          "override this and create a new partition assignment in addition to the existing one. "
                          "The --additional flag can also be used to change the throttle by resubmitting the "
                          "current reassignment.")
VERIFY_PERIODICALLY_MESSAGE = ("Warning: You must run --verify periodically, until the reassignment completes, to "
                               "ensure the throttle is removed.")

Assignment = dict[TopicPartition, list[int]]


class PlanFileError(ValueError):
    """A reassignment JSON that cannot be used (the message says why, as Kafka's tool does)."""


def _java_list(values: Iterable[Any]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def parse_plan(text: str) -> Assignment:
    """The target replicas of a reassignment JSON, checked as Kafka's tool checks them for --execute."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PlanFileError(f"The input string is not a valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise PlanFileError("The reassignment JSON must be an object with \"version\" and \"partitions\"")
    version = doc.get("version", PLAN_VERSION)
    if version != PLAN_VERSION or isinstance(version, bool):
        raise PlanFileError(f"Not supported version field value {version}")
    entries = doc.get("partitions", [])
    if not isinstance(entries, list):
        raise PlanFileError("\"partitions\" must be a list")
    plan: Assignment = {}
    duplicates: list[TopicPartition] = []
    for entry in entries:
        tp, replicas = _parse_entry(entry)
        if tp in plan:
            duplicates.append(tp)
        plan[tp] = replicas
    if not plan:
        raise PlanFileError("Partition reassignment list cannot be empty")
    if any(not replicas for replicas in plan.values()):
        raise PlanFileError("Partition replica list cannot be empty")
    if duplicates:
        raise PlanFileError("Partition reassignment contains duplicate topic partitions: "
                            + ",".join(partition_label(tp) for tp in duplicates))
    repeated = [f"{partition_label(tp)} contains multiple entries for "
                + ",".join(str(b) for b in sorted({b for b in replicas if replicas.count(b) > 1}))
                for tp, replicas in plan.items() if len(set(replicas)) != len(replicas)]
    if repeated:
        raise PlanFileError("Partition replica lists may not contain duplicate entries: " + ". ".join(repeated))
    return plan


def _parse_entry(entry: object) -> tuple[TopicPartition, list[int]]:
    if not isinstance(entry, dict):
        raise PlanFileError(f"Each partition must be an object with topic, partition and replicas, not {entry!r}")
    topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
    if not isinstance(topic, str) or not topic:
        raise PlanFileError(f"Missing or invalid \"topic\" in {json.dumps(entry)}")
    if not _is_int(partition) or partition < 0:  # type: ignore[operator]
        raise PlanFileError(f"Missing or invalid \"partition\" in {json.dumps(entry)}")
    if not isinstance(replicas, list) or not all(_is_int(b) and b >= 0 for b in replicas):
        raise PlanFileError(f"Missing or invalid \"replicas\" (a list of broker ids) in {json.dumps(entry)}")
    tp = TopicPartition(topic, int(partition))  # type: ignore[arg-type]
    log_dirs = entry.get("log_dirs")
    if log_dirs is not None:
        if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
            raise PlanFileError(f"\"log_dirs\" must be a list of strings in {json.dumps(entry)}")
        if len(log_dirs) != len(replicas):
            raise PlanFileError(f"Size of replicas list {_java_list(replicas)} is different from size of log dirs "
                                f"list {_java_list(log_dirs)} for partition {partition_label(tp)}")
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise PlanFileError(f"Partition {partition_label(tp)}: a broker keeps its partitions in one log directory, so "
                                f"\"log_dirs\" entries can only be \"{ANY_LOG_DIR}\"")
    return tp, list(replicas)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def format_plan(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """A reassignment JSON of these replica lists (sorted by topic and partition), as Kafka writes one."""
    partitions = [{"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas),
                   "log_dirs": [ANY_LOG_DIR] * len(replicas)}
                  for tp, replicas in sorted(assignment.items())]
    return json.dumps({"version": PLAN_VERSION, "partitions": partitions}, separators=(",", ":"))


def current_assignment_text(current: Mapping[TopicPartition, Sequence[int]]) -> str:
    """What --execute prints before it starts: the replicas now, to roll back to."""
    return (f"Current partition replica assignment\n\n{format_plan(current)}\n\n"
            "Save this to use as the --reassignment-json-file option during rollback")


# -- throttles -------------------------------------------------------------------------------------

#: partition -> (its source replicas, its destination replicas that are not sources)
Moves = dict[TopicPartition, tuple[frozenset[int], frozenset[int]]]


def partition_moves(ongoing: Mapping[TopicPartition, PartitionReassignment],
                    plan: Mapping[TopicPartition, Sequence[int]],
                    current: Mapping[TopicPartition, Sequence[int]]) -> Moves:
    """Every partition moving once ``plan`` is submitted: the reassignments already running (sources:
    their replicas less the ones being added; destinations: those being added) and the plan's (sources:
    those of a running reassignment of the partition, else its current replicas)."""
    moves: Moves = {}
    for tp, r in ongoing.items():
        moves[tp] = (frozenset(r.replicas) - frozenset(r.adding_replicas), frozenset(r.adding_replicas))
    for tp, target in plan.items():
        sources = moves[tp][0] if tp in moves else frozenset(current.get(tp, ()))
        moves[tp] = (sources, frozenset(target) - sources)
    return moves


def throttle_lists(moves: Moves) -> dict[str, tuple[str, str]]:
    """Per topic, the ``(leader.replication.throttled.replicas, follower.replication.throttled.replicas)``
    values: every source replica as ``partition:broker``, and every destination that is not a source."""
    leaders: dict[str, set[tuple[int, int]]] = {}
    followers: dict[str, set[tuple[int, int]]] = {}
    for tp, (sources, destinations) in moves.items():
        leaders.setdefault(tp.topic, set()).update((tp.partition, b) for b in sources)
        followers.setdefault(tp.topic, set()).update((tp.partition, b) for b in destinations - sources)

    def joined(pairs: set[tuple[int, int]]) -> str:
        return ",".join(f"{p}:{b}" for p, b in sorted(pairs))

    return {topic: (joined(leaders[topic]), joined(followers.get(topic, set()))) for topic in sorted(leaders)}


def brokers_involved(moves: Moves) -> set[int]:
    """The brokers a reassignment copies from or to (their rates are set)."""
    return {b for sources, destinations in moves.values() for b in sources | destinations}


# -- what the tool prints --------------------------------------------------------------------------


def verify_lines(plan: Mapping[TopicPartition, Sequence[int]], current: Mapping[TopicPartition, Sequence[int]],
                 ongoing: Mapping[TopicPartition, PartitionReassignment]) -> list[str]:
    """``--verify``'s report: one line per partition of the plan, done or still in progress."""
    lines = ["Status of partition reassignment:"]
    for tp in sorted(plan):
        target = list(plan[tp])
        if tp in ongoing:
            lines.append(f"Reassignment of partition {partition_label(tp)} is still in progress.")
        elif list(current.get(tp, ())) == target:
            lines.append(f"Reassignment of partition {partition_label(tp)} is completed.")
        else:
            now = ",".join(str(b) for b in current.get(tp, ()))
            lines.append(f"There is no active reassignment of partition {partition_label(tp)}, but replica set is {now} "
                         f"rather than {','.join(str(b) for b in target)}.")
    return lines


def list_lines(ongoing: Mapping[TopicPartition, PartitionReassignment]) -> list[str]:
    """``--list``'s report of the reassignments in progress."""
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        r = ongoing[tp]
        line = f"{partition_label(tp)}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding_replicas:
            line += f" adding: {','.join(map(str, r.adding_replicas))}."
        if r.removing_replicas:
            line += f" removing: {','.join(map(str, r.removing_replicas))}."
        lines.append(line)
    return lines


def targets(current: Mapping[TopicPartition, Sequence[int]],
            ongoing: Mapping[TopicPartition, PartitionReassignment]) -> Assignment:
    """The replicas each partition will have once the reassignments in progress complete."""
    out = {tp: list(replicas) for tp, replicas in current.items()}
    for tp, r in ongoing.items():
        out[tp] = [b for b in r.replicas if b not in r.removing_replicas]
    return out


def partitions_text(partitions: Iterable[TopicPartition]) -> str:
    return ",".join(partition_label(tp) for tp in sorted(partitions))
