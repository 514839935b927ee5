"""``kbroker cluster``: the cluster's health and the moves that operate it through its life.

* ``describe``: brokers, controller, under-replicated and offline partitions.
* ``reassign --execute|--verify|--cancel PLAN.json`` (and ``--list``): Kafka's
  ``kafka-reassign-partitions.sh`` over AlterPartitionReassignments / ListPartitionReassignments,
  with its replication throttles (``--throttle``) and its words (:mod:`kbroker_cli.reassignment`).
* ``decommission BROKER_ID``: leadership off the broker first (ElectLeaders), then a reassignment
  of its replicas; ``--wait`` returns once it holds and leads nothing.
* ``rebalance``: replicas and preferred leaders spread evenly over the live brokers, as planned by
  :mod:`broker.cluster.balance` (imported when a command needs it, so ``--help`` stays quick).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO

from client import Admin
from client.cluster import ClusterMetadata, PartitionInfo
from client.errors import KafkaError, UnsupportedVersionError
from client.types import PartitionReassignment, TopicPartition
from kbroker_cli.command import Arg, CommandGroup, arg, json_flag, one_of
from kbroker_cli.common import (
    EXIT_OK,
    CliError,
    Ctx,
    UsageError,
    admin,
    explain,
    kafka_errors,
    partition_label,
    replicas_and_isr,
    table,
)
from kbroker_cli.reassignment import (
    CANNOT_EXECUTE_MESSAGE,
    VERIFY_PERIODICALLY_MESSAGE,
    Assignment,
    PlanFileError,
    brokers_involved,
    current_assignment_text,
    format_plan,
    list_lines,
    parse_plan,
    partition_moves,
    partitions_text,
    targets,
    throttle_lists,
    verify_lines,
)
from protocol.error_codes import ErrorCode

group = CommandGroup("cluster", "brokers and partition health; move partitions, decommission, rebalance")

#: how often --wait (and the leadership hand-over) look at the cluster again
POLL_SECONDS = 1.0
#: how long the leadership hand-over of ``decommission`` waits before going on with the reassignment
LEADERSHIP_WAIT_SECONDS = 30.0
#: how often --wait repeats its progress line when nothing changed
PROGRESS_EVERY_SECONDS = 30.0


def bytes_per_second(text: str) -> int:
    """``--throttle``: a positive whole number of bytes per second."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected bytes per second, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes per second, got {value}")
    return value


def throttle_arg(what: str) -> Arg:
    return arg("--throttle", type=bytes_per_second, metavar="BYTES_PER_S",
               help=f"limit the replication traffic {what} to this many bytes/s per broker "
                    "(Kafka's leader./follower.replication.throttled.rate and .replicas)")


@group.command("describe", "brokers, controller, under-replicated and offline partitions",
               json_flag("one JSON object"))
async def describe(ctx: Ctx, args: argparse.Namespace) -> int:
    async with admin(ctx) as client:
        desc = await client.describe_cluster()
        client.net.set_topics(None)
        md = await client.net.refresh_metadata()
    brokers = sorted(desc.brokers, key=lambda b: b.node_id)
    under, offline = [], []
    for name, t in sorted(md.topics.items()):
        for p, info in sorted(t.partitions.items()):
            row = {"topic": name, "partition": p, "leader": info.leader, "replicas": list(info.replicas),
                   "isr": list(info.isr)}
            if info.leader < 0:
                offline.append(row)
            elif len(info.isr) < len(info.replicas):
                under.append(row)
    data = {"cluster_id": desc.cluster_id, "controller": desc.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in brokers],
            "under_replicated_partitions": under, "offline_partitions": offline}
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    print(f"ClusterId: {desc.cluster_id}\tController: {desc.controller_id}\tBrokers: {len(brokers)}")
    table([["ID", "HOST", "PORT", "RACK", "ROLE"]] + [
        [str(b.node_id), b.host, str(b.port), b.rack or "-", "controller" if b.node_id == desc.controller_id else ""]
        for b in brokers])
    for title, rows in (("Under-replicated partitions", under), ("Offline partitions", offline)):
        print(f"{title}: {len(rows)}")
        for r in rows:
            print(f"\t{r['topic']}-{r['partition']}\tLeader: {r['leader']}\t{replicas_and_isr(r['replicas'], r['isr'])}")
    return EXIT_OK


# -- what the moving commands share ----------------------------------------------------------------


def _partitions(md: ClusterMetadata) -> dict[TopicPartition, PartitionInfo]:
    return {TopicPartition(t, p): info for t, ti in md.topics.items() for p, info in ti.partitions.items()}


async def _cluster(client: Admin) -> tuple[ClusterMetadata, Assignment]:
    """The metadata of every topic (internal ones too) and each partition's replicas, leader first."""
    client.net.set_topics(None)
    md = await client.net.refresh_metadata()
    return md, {tp: list(info.replicas) for tp, info in _partitions(md).items()}


_NO_REASSIGNMENT = "the cluster does not support partition reassignment (ListPartitionReassignments)"
_REASSIGN_ERRORS = {ErrorCode.UNSUPPORTED_VERSION: _NO_REASSIGNMENT,
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "not authorized to reassign partitions (ALTER on the cluster)"}


async def _ongoing(client: Admin, partitions: Sequence[TopicPartition] | None = None
                   ) -> dict[TopicPartition, PartitionReassignment]:
    with kafka_errors(_REASSIGN_ERRORS):
        return await client.list_partition_reassignments(partitions)


def _read_plan(path: str) -> Assignment:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None
    try:
        return parse_plan(text)
    except PlanFileError as exc:
        raise CliError(f"{path}: {exc}") from None


def _errors_text(errors: Mapping[TopicPartition, KafkaError]) -> str:
    return "\n".join(f"{partition_label(tp)}: {explain(exc)}" for tp, exc in sorted(errors.items()))


async def _execute(client: Admin, md: ClusterMetadata, plan: Assignment, current: Assignment,
                   ongoing: Mapping[TopicPartition, PartitionReassignment], throttle: int | None, out: IO[str], *,
                   allow_replication_factor_change: bool = True) -> None:
    """What ``--execute`` does once the plan is known: print the assignment to roll back to, throttle,
    start the reassignments."""
    print(current_assignment_text({tp: current[tp] for tp in plan if tp in current}), file=out)
    if throttle is not None:
        print(VERIFY_PERIODICALLY_MESSAGE, file=out)
        moves = partition_moves(ongoing, plan, current)
        with kafka_errors(otherwise=lambda exc: explain(exc, "cannot set the replication throttle")):
            await client.set_replication_throttles(throttle, brokers_involved(moves) & set(md.brokers),
                                                   throttle_lists(moves))
        print(f"The inter-broker throttle limit was set to {throttle} B/s", file=out)
    with kafka_errors(_REASSIGN_ERRORS):
        errors = await client.alter_partition_reassignments(
            plan, allow_replication_factor_change=allow_replication_factor_change)
    if errors:
        raise CliError(f"Error reassigning partition(s):\n{_errors_text(errors)}")
    print(f"Successfully started partition reassignment{'' if len(plan) == 1 else 's'} for {partitions_text(plan)}",
          file=out)


async def _clear_throttles(client: Admin, md: ClusterMetadata, topics: set[str], out: IO[str]) -> None:
    """Remove the throttle rates from every live broker and the throttled replica lists from ``topics``."""
    brokers = sorted(md.brokers)
    topics = {t for t in topics if t in md.topics}
    print(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
          f"{','.join(map(str, brokers))}", file=out)
    print(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(sorted(topics))}",
          file=out)
    with kafka_errors(otherwise=lambda exc: explain(exc, "cannot clear the replication throttle")):
        await client.clear_replication_throttles(brokers, topics)


# -- kbroker cluster reassign ----------------------------------------------------------------------

_EXECUTE_ONLY = ("throttle", "additional", "disallow_replication_factor_change")


@group.command(
    "reassign", "move partitions as Kafka's reassignment JSON says (kafka-reassign-partitions.sh)",
    one_of(arg("--execute", metavar="PLAN.json", help="start the reassignments of the plan; prints the current "
               "assignment first, to roll back with"),
           arg("--verify", metavar="PLAN.json", help="done / in progress per partition of the plan; clears the "
               "throttles once no reassignment is left"),
           arg("--cancel", metavar="PLAN.json", help="cancel the plan's reassignments in progress (their original "
               "replicas are restored) and clear the throttles"),
           arg("--list", action="store_true", help="the reassignments in progress"),
           required=True),
    throttle_arg("of the reassignment (with --execute)"),
    arg("--additional", action="store_true",
        help="with --execute: run even though reassignments are in progress (also how a throttle is changed)"),
    arg("--disallow-replication-factor-change", action="store_true",
        help="with --execute: refuse targets that change a partition's number of replicas"),
    arg("--preserve-throttles", action="store_true", help="with --verify / --cancel: leave the throttles set"),
    formatter_class=argparse.RawDescriptionHelpFormatter,
    epilog="PLAN.json: {\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,2,4]}]}\n"
           "(the replicas are the complete target list, preferred leader first; \"log_dirs\" may only say \"any\")")
async def reassign(ctx: Ctx, args: argparse.Namespace) -> int:
    action = "--execute" if args.execute else "--verify" if args.verify else "--cancel" if args.cancel else "--list"
    for option in _EXECUTE_ONLY if action != "--execute" else ():
        if getattr(args, option):
            raise UsageError(f"option \"--{option.replace('_', '-')}\" can't be used with action \"{action}\"")
    if args.preserve_throttles and action not in ("--verify", "--cancel"):
        raise UsageError(f"option \"--preserve-throttles\" can't be used with action \"{action}\"")
    plan = _read_plan(args.execute or args.verify or args.cancel) if action != "--list" else {}
    async with admin(ctx) as client:
        if action == "--execute":
            await _reassign_execute(client, plan, args)
        elif action == "--verify":
            ongoing = await _ongoing(client)
            md, current = await _cluster(client)
            print("\n".join(verify_lines(plan, current, ongoing)))
            if not ongoing and not args.preserve_throttles:
                await _clear_throttles(client, md, {tp.topic for tp in plan}, sys.stdout)
        elif action == "--cancel":
            await _reassign_cancel(client, plan, args.preserve_throttles)
        else:
            print("\n".join(list_lines(await _ongoing(client))))
    return EXIT_OK


async def _reassign_execute(client: Admin, plan: Assignment, args: argparse.Namespace) -> None:
    ongoing = await _ongoing(client)
    if ongoing and not args.additional:
        raise CliError(CANNOT_EXECUTE_MESSAGE)
    md, current = await _cluster(client)
    unknown = sorted({b for replicas in plan.values() for b in replicas} - set(md.brokers))
    if unknown:
        raise CliError(f"Unknown broker id {unknown[0]}")
    missing = [tp for tp in plan if tp not in current]
    if missing:
        raise CliError(f"Unable to find partition: {', '.join(partition_label(tp) for tp in sorted(missing))}")
    await _execute(client, md, plan, current, ongoing, args.throttle, sys.stdout,
                   allow_replication_factor_change=not args.disallow_replication_factor_change)


async def _reassign_cancel(client: Admin, plan: Assignment, preserve_throttles: bool) -> None:
    ongoing = await _ongoing(client, sorted(plan))
    active = sorted(tp for tp in plan if tp in ongoing)
    if active:
        with kafka_errors(_REASSIGN_ERRORS):
            errors = await client.alter_partition_reassignments(dict.fromkeys(active))
        if errors:
            raise CliError(f"Error cancelling partition reassignment{'' if len(errors) == 1 else 's'} for:\n"
                           f"{_errors_text(errors)}")
        print(f"Successfully cancelled partition reassignment{'' if len(active) == 1 else 's'} for: "
              f"{partitions_text(active)}")
    else:
        print("None of the specified partition reassignments are active.")
    if not preserve_throttles:
        md, _ = await _cluster(client)
        await _clear_throttles(client, md, {tp.topic for tp in plan}, sys.stdout)


# -- kbroker cluster decommission ------------------------------------------------------------------


@group.command(
    "decommission", "move every replica and leadership off a broker, so it can be stopped for good",
    arg("broker_id", type=int, metavar="BROKER_ID", help="the broker to empty (a dead one too: its replicas move)"),
    throttle_arg("of the move"),
    arg("--wait", action="store_true", help="return only when the broker holds no replica and leads nothing"),
    arg("--wait-timeout", type=float, default=3600.0, metavar="SECONDS",
        help="with --wait: give up after this long (default 3600)"))
async def decommission(ctx: Ctx, args: argparse.Namespace) -> int:
    from broker.cluster.balance import PlanError
    from broker.cluster.balance import decommission as plan_decommission

    leaving = args.broker_id
    if args.wait_timeout <= 0:
        raise UsageError("--wait-timeout must be positive")
    async with admin(ctx) as client:
        md, current = await _cluster(client)
        if leaving not in md.brokers and not any(leaving in replicas for replicas in current.values()):
            raise CliError(f"cannot decommission broker {leaving}: it is not in the cluster (brokers "
                           f"{','.join(map(str, sorted(md.brokers)))}) and holds no replica")
        ongoing = await _ongoing(client)
        racks = {b.node_id: b.rack for b in md.brokers.values()}
        try:
            plan: Assignment = plan_decommission(targets(current, ongoing), racks, leaving)
        except PlanError as exc:
            raise CliError(f"cannot decommission broker {leaving}: {exc}") from None
        if plan:
            print(f"Moving {len(plan)} replica{'' if len(plan) == 1 else 's'} off broker {leaving}")
            await _hand_over_leadership(client, md, leaving, plan, ongoing)
            md, current = await _cluster(client)
            print("Proposed partition reassignment configuration")
            print(format_plan(plan))
            await _execute(client, md, plan, current, ongoing, args.throttle, sys.stdout)
        else:
            print(f"Broker {leaving} is in no partition's target replicas: nothing to move")
        if not args.wait:
            if plan:
                print("Follow the move with 'kbroker cluster reassign --verify PLAN.json' (the proposed plan above), "
                      "or run this command again with --wait")
            return EXIT_OK
        await _wait_until_empty(client, leaving, args.wait_timeout)
        if args.throttle is not None:
            md, _ = await _cluster(client)
            await _clear_throttles(client, md, {tp.topic for tp in plan}, sys.stdout)
    print(f"Broker {leaving} holds no replicas and leads no partitions: it can be stopped.")
    return EXIT_OK


async def _hand_over_leadership(client: Admin, md: ClusterMetadata, leaving: int, plan: Assignment,
                                ongoing: Mapping[TopicPartition, PartitionReassignment]) -> None:
    """Move leadership off ``leaving`` before its replicas move: for each partition it leads with another
    live in-sync replica, that replica (the planned preferred leader when it can) is made the preferred
    one, by a reordering reassignment when it is not first already, then elected (ElectLeaders)."""
    partitions = _partitions(md)
    led = sorted(tp for tp, info in partitions.items() if info.leader == leaving)
    if not led:
        return
    reorders: Assignment = {}
    elect: list[TopicPartition] = []
    for tp in led:
        info = partitions[tp]
        in_sync = [b for b in info.isr if b != leaving and b in md.brokers]
        if not in_sync:
            print(f"Partition {partition_label(tp)} has no other in-sync replica: its leadership moves when its "
                  f"reassignment completes")
            continue
        if info.replicas and info.replicas[0] in in_sync:
            elect.append(tp)
            continue
        if tp in ongoing:
            continue
        new_leader = next((b for b in plan.get(tp, ()) if b in in_sync), in_sync[0])
        reorders[tp] = [new_leader] + [b for b in info.replicas if b != new_leader]
        elect.append(tp)
    if not elect:
        return
    deadline = time.monotonic() + LEADERSHIP_WAIT_SECONDS
    if reorders:
        with kafka_errors(_REASSIGN_ERRORS):
            errors = await client.alter_partition_reassignments(reorders)
        if errors:
            raise CliError(f"Error reordering replicas to move leadership off broker {leaving}:\n{_errors_text(errors)}")

        async def reordered() -> bool:
            still = await client.list_partition_reassignments(sorted(reorders))
            _, now = await _cluster(client)
            return not still and all(now.get(tp, [None])[0] == reorders[tp][0] for tp in reorders)

        if not await _poll(reordered, deadline):
            print(f"The replicas of {partitions_text(reorders)} were not reordered within "
                  f"{LEADERSHIP_WAIT_SECONDS:.0f}s: going on", file=sys.stderr)
    with kafka_errors(_REASSIGN_ERRORS):
        errors = await client.elect_leaders(elect)
    failed = {tp: exc for tp, exc in errors.items() if exc.code != ErrorCode.ELECTION_NOT_NEEDED}
    if failed:
        print(f"Leader election failed for:\n{_errors_text(failed)}", file=sys.stderr)

    async def moved() -> bool:
        md_now, _ = await _cluster(client)
        return not any(info.leader == leaving for tp, info in _partitions(md_now).items() if tp in elect)

    if await _poll(moved, deadline):
        print(f"Moved the leadership of {len(elect)} partition{'' if len(elect) == 1 else 's'} off broker {leaving}")
    else:
        print(f"Broker {leaving} still leads some partitions after {LEADERSHIP_WAIT_SECONDS:.0f}s: their leadership "
              f"moves when their reassignments complete", file=sys.stderr)


async def _poll(done: Callable[[], Awaitable[bool]], deadline: float) -> bool:
    """Call ``done()`` every :data:`POLL_SECONDS` until it is true (True) or ``deadline`` passes (False)."""
    while True:
        if await done():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)


async def _wait_until_empty(client: Admin, broker: int, timeout: float) -> None:
    """Poll Metadata and ListPartitionReassignments until ``broker`` is in no partition's replicas and
    leads none, printing progress; a :class:`CliError` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: tuple[int, int, int] | None = None
    printed = 0.0
    while True:
        md, current = await _cluster(client)
        ongoing = await _ongoing(client)
        holds = sum(broker in replicas for replicas in current.values())
        leads = sum(info.leader == broker for info in _partitions(md).values())
        if not holds and not leads:
            return
        state = (holds, leads, len(ongoing))
        now = time.monotonic()
        if state != last or now - printed >= PROGRESS_EVERY_SECONDS:
            print(f"Broker {broker}: in the replicas of {holds} partition{'' if holds == 1 else 's'}, leads {leads}; "
                  f"{len(ongoing)} reassignment{'' if len(ongoing) == 1 else 's'} in progress", flush=True)
            last, printed = state, now
        if now >= deadline:
            raise CliError(f"broker {broker} still holds {holds} replicas and leads {leads} partitions after "
                           f"{timeout:g}s; 'kbroker cluster reassign --list' shows what is still moving")
        await asyncio.sleep(POLL_SECONDS)


# -- kbroker cluster rebalance ---------------------------------------------------------------------


@group.command(
    "rebalance", "spread replicas and preferred leaders evenly over the live brokers (racks honoured)",
    arg("--dry-run", action="store_true", help="print the plan, move nothing"),
    json_flag("print only the plan, as Kafka's reassignment JSON (messages go to stderr)"),
    throttle_arg("of the moves"))
async def rebalance(ctx: Ctx, args: argparse.Namespace) -> int:
    from broker.cluster.balance import PlanError, replica_moves
    from broker.cluster.balance import rebalance as plan_rebalance

    out = sys.stderr if args.json else sys.stdout
    async with admin(ctx) as client:
        md, current = await _cluster(client)
        try:
            ongoing = await client.list_partition_reassignments()
        except UnsupportedVersionError:
            if not args.dry_run:
                raise CliError(_NO_REASSIGNMENT) from None
            ongoing = {}
        except KafkaError as exc:
            raise CliError(_REASSIGN_ERRORS.get(exc.code) or explain(exc)) from None
        base = targets(current, ongoing)
        racks = {b.node_id: b.rack for b in md.brokers.values()}
        try:
            plan: Assignment = plan_rebalance(base, racks)
        except PlanError as exc:
            raise CliError(f"cannot plan a rebalance: {exc}") from None
        if args.json:
            print(format_plan(plan))
        else:
            _print_rebalance(base, plan, racks, ongoing, replica_moves(base, plan))
        if args.dry_run or not plan:
            return EXIT_OK
        await _execute(client, md, plan, current, ongoing, args.throttle, out)
        if args.throttle is not None:
            print("Follow the moves with 'kbroker cluster reassign --verify PLAN.json' (the proposed plan"
                  f"{' printed' if args.json else ' above'}), which clears the throttle once they are done", file=out)
    return EXIT_OK


def _print_rebalance(base: Assignment, plan: Assignment, racks: Mapping[int, str | None],
                     ongoing: Mapping[TopicPartition, PartitionReassignment], moves: int) -> None:
    brokers = sorted(racks)
    if ongoing:
        print(f"Planned from the targets of the {len(ongoing)} reassignment{'' if len(ongoing) == 1 else 's'} "
              f"in progress")
    if not plan:
        print(f"Replicas and preferred leaders are balanced over brokers {','.join(map(str, brokers))}: nothing to move")
        return
    after = {**base, **plan}
    leaders = sum(plan[tp][0] != base[tp][0] for tp in plan)
    print(f"Rebalancing over brokers {','.join(map(str, brokers))}: {moves} replica move{'' if moves == 1 else 's'} "
          f"and {leaders} preferred leader change{'' if leaders == 1 else 's'} in {len(plan)} "
          f"partition{'' if len(plan) == 1 else 's'}")

    def tally(assignment: Assignment, broker: int, first: bool) -> int:
        return sum((replicas[:1] if first else replicas).count(broker) for replicas in assignment.values())

    gone = sorted({b for replicas in base.values() for b in replicas} - set(brokers))
    rows = [["BROKER", "RACK", "REPLICAS", "PREFERRED LEADER OF"]]
    for b in brokers + gone:
        rows.append([str(b) if b in racks else f"{b} (not alive)", racks.get(b) or "-",
                     f"{tally(base, b, False)} -> {tally(after, b, False)}",
                     f"{tally(base, b, True)} -> {tally(after, b, True)}"])
    table(rows)
    print("Proposed partition reassignment configuration")
    print(format_plan(plan))
