"""Balance plans: where the replicas and preferred leaders of existing partitions should move, pure.

The planner behind ``kbroker cluster rebalance`` / ``decommission`` and the controller's
``partition.autobalancer.mode=node_add``.  It works on plain data and imports only the standard
library, so the CLI can import it without the broker:

* ``assignments``: ``{(topic, partition): [broker, ...]}``, each partition's replicas with its
  preferred leader first (a partition's ``replicas`` in Metadata);
* ``brokers``: ``{broker_id: rack or None}``, the live brokers a plan may put replicas on.

A plan is ``{(topic, partition): [broker, ...]}`` holding only the partitions whose replica list
changes (membership or order): the target replicas of Kafka's AlterPartitionReassignments, in key
order.  Plans are deterministic (the same input gives the same plan, whatever the order of the
mappings) and move as few replicas as they can:

* :func:`rebalance` moves the replicas of brokers that are not live onto live ones, then spreads
  each topic's replicas over the live brokers so that counts differ by at most one per topic, then
  evens out each broker's total over all topics by moves that keep every topic's spread, then does
  the same for preferred leaders (by reordering replica lists, which moves no data).  Within a topic
  a replica moves only from a broker above the even share to one below it, so on a cluster without
  racks a topic gets the fewest moves that even it out (evening out the totals may add a few); a
  balanced cluster gets an empty plan.
* :func:`decommission` moves every replica of one broker to the least loaded live brokers (and
  hands its preferred leaderships to the replicas leading least), and moves nothing else.

Racks: when any live broker has a rack, each partition's replicas are kept spread over as many
racks as they can be (brokers without a rack share the rack ``""``, as for new topics in
:mod:`broker.cluster.placement`).  No move puts a replica into a rack holding at least as many of
the partition's replicas as the rack it leaves, so a partition's rack spread never gets worse, and
:func:`rebalance` improves the partitions whose spread can be improved.  When racks of different
sizes make an even spread of replicas impossible, the rack spread wins and the counts are as even
as the racks allow.

How: after the forced moves, balancing is a search for augmenting paths on the brokers (a move
from a broker above the share to one below it, or a chain of moves through brokers whose counts
stay as they are when no direct move keeps the racks spread), the way a max-flow is grown.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["Assignments", "Plan", "PlanError", "apply_plan", "decommission", "rebalance", "replica_moves"]

Partition = tuple[str, int]
Assignments = Mapping[Partition, Sequence[int]]
Plan = dict[Partition, list[int]]
#: one step of a balancing path: (partition, from broker, to broker)
_Step = tuple[Partition, int, int]
#: the best step from one broker to another using none of the given partitions, if there is one
_Find = Callable[[int, int, set[Partition]], _Step | None]


class PlanError(ValueError):
    """No plan can do what was asked (an unknown broker, too few brokers left for a partition)."""


def rebalance(assignments: Assignments, brokers: Mapping[int, str | None]) -> Plan:
    """A plan spreading replicas and preferred leaders evenly over ``brokers`` with the fewest moves.

    Replicas on brokers that are not in ``brokers`` move to live ones (a partition with more
    replicas than there are live brokers keeps the ones that cannot move)."""
    planner = _Planner(assignments, brokers, brokers)
    live = set(brokers)
    for topic in planner.topic_names:
        planner.relocate(topic, lambda b: b not in live, strict=False)
        planner.spread_racks(topic)
        planner.balance_replicas(topic)
    planner.balance_total_replicas()
    for topic in planner.topic_names:
        planner.balance_leaders(topic)
    planner.balance_total_leaders()
    return planner.plan()


def decommission(assignments: Assignments, brokers: Mapping[int, str | None], broker_id: int) -> Plan:
    """A plan moving every replica off ``broker_id`` (live or not) onto the other live brokers,
    keeping each partition's replication factor and rack spread; nothing else moves.

    Raises :class:`PlanError` for a broker that is neither live nor holds a replica, and when a
    partition would have fewer brokers left than it has replicas."""
    holds = any(broker_id in replicas for replicas in assignments.values())
    if broker_id not in brokers and not holds:
        raise PlanError(f"broker {broker_id} is not in the cluster")
    remaining = {b: rack for b, rack in brokers.items() if b != broker_id}
    planner = _Planner(assignments, remaining, brokers)
    for topic in planner.topic_names:
        planner.relocate(topic, lambda b: b == broker_id, strict=True, new_leaders=True)
    return planner.plan()


def apply_plan(assignments: Assignments, plan: Mapping[Partition, Sequence[int]]) -> dict[Partition, list[int]]:
    """The assignments once ``plan`` is carried out."""
    out = {tp: list(replicas) for tp, replicas in assignments.items()}
    out.update({tp: list(replicas) for tp, replicas in plan.items()})
    return out


def replica_moves(assignments: Assignments, plan: Mapping[Partition, Sequence[int]]) -> int:
    """How many replicas ``plan`` copies to a broker that does not hold them yet."""
    return sum(len(set(target) - set(assignments.get(tp, ()))) for tp, target in plan.items())


class _Planner:
    """The assignments being changed, with the counts the balancing reads kept up to date."""

    def __init__(self, assignments: Assignments, live: Mapping[int, str | None],
                 racks: Mapping[int, str | None]) -> None:
        if not live:
            raise PlanError("no live brokers to place replicas on")
        self.live = sorted(live)
        rack_aware = any(racks.get(b) for b in live)
        self._rack: dict[int, str] = {b: (r or "") if rack_aware else f"\0{b}" for b, r in racks.items()}
        self.racks_matter = rack_aware
        self.original: dict[Partition, tuple[int, ...]] = {}
        self.replicas: dict[Partition, list[int]] = {}
        self.partitions: dict[str, list[Partition]] = {}
        for tp in sorted(assignments):
            replicas = list(assignments[tp])
            if not replicas or len(set(replicas)) != len(replicas):
                raise PlanError(f"partition {tp[0]}-{tp[1]} has replicas {replicas}")
            self.original[tp] = tuple(replicas)
            self.replicas[tp] = replicas
            self.partitions.setdefault(tp[0], []).append(tp)
        for replicas in self.replicas.values():
            for b in replicas:
                self._rack.setdefault(b, f"\0{b}")  # a broker of unknown rack is a rack of its own
        self.topic_names = sorted(self.partitions)
        self.count: dict[str, Counter[int]] = {t: Counter() for t in self.topic_names}
        self.leads: dict[str, Counter[int]] = {t: Counter() for t in self.topic_names}
        self.total: Counter[int] = Counter()
        self.total_leads: Counter[int] = Counter()
        #: topic -> broker -> the partitions it holds / leads
        self.holding: dict[str, dict[int, set[Partition]]] = {t: {} for t in self.topic_names}
        self.leading: dict[str, dict[int, set[Partition]]] = {t: {} for t in self.topic_names}
        for tp, replicas in self.replicas.items():
            for b in replicas:
                self._hold(tp, b, +1)
            self._lead(tp, replicas[0], +1)

    # -- bookkeeping ---------------------------------------------------------------------------

    def _hold(self, tp: Partition, broker: int, delta: int) -> None:
        topic = tp[0]
        self.count[topic][broker] += delta
        self.total[broker] += delta
        held = self.holding[topic].setdefault(broker, set())
        held.add(tp) if delta > 0 else held.discard(tp)

    def _lead(self, tp: Partition, broker: int, delta: int) -> None:
        topic = tp[0]
        self.leads[topic][broker] += delta
        self.total_leads[broker] += delta
        led = self.leading[topic].setdefault(broker, set())
        led.add(tp) if delta > 0 else led.discard(tp)

    def rack(self, broker: int) -> str:
        """The broker's rack (without racks, or not known: a rack of its own)."""
        return self._rack[broker]

    def _rack_counts(self, tp: Partition, leaving: Callable[[int], bool] = lambda b: False) -> Counter[str]:
        return Counter(self.rack(b) for b in self.replicas[tp] if not leaving(b))

    def _rack_ok(self, tp: Partition, src: int, dst: int) -> bool:
        """Moving ``tp``'s replica from ``src`` to ``dst`` (not a replica of it) leaves its rack spread
        at least as even."""
        if not self.racks_matter:
            return True  # every broker a rack of its own: one replica per rack whatever moves
        racks = self._rack
        src_rack, dst_rack = racks[src], racks[dst]
        if src_rack == dst_rack:
            return True
        in_dst = in_src = 0
        for b in self.replicas[tp]:
            rack = racks[b]
            in_dst += rack == dst_rack
            in_src += rack == src_rack
        return in_dst < in_src

    def move(self, step: _Step) -> None:
        """Replace ``tp``'s replica on ``src`` with one on ``dst``, in the same place in the list."""
        tp, src, dst = step
        replicas = self.replicas[tp]
        i = replicas.index(src)
        replicas[i] = dst
        self._hold(tp, src, -1)
        self._hold(tp, dst, +1)
        if i == 0:
            self._lead(tp, src, -1)
            self._lead(tp, dst, +1)

    def prefer(self, step: _Step) -> None:
        """Make ``dst`` (a replica of ``tp``) its preferred leader, swapping places with ``src``."""
        tp, src, dst = step
        replicas = self.replicas[tp]
        i = replicas.index(dst)
        replicas[0], replicas[i] = dst, src
        self._lead(tp, src, -1)
        self._lead(tp, dst, +1)

    def plan(self) -> Plan:
        return {tp: list(r) for tp, r in self.replicas.items() if tuple(r) != self.original[tp]}

    # -- forced moves ------------------------------------------------------------------------------

    def relocate(self, topic: str, leaving: Callable[[int], bool], *, strict: bool, new_leaders: bool = False) -> None:
        """Move the topic's replicas on ``leaving`` brokers each to the live broker that keeps the
        partition's racks most spread, then the one holding fewest of the topic, then fewest in all.
        ``new_leaders``: a partition whose preferred leader left gets the replica leading least."""
        for tp in self.partitions[topic]:
            gone = [b for b in self.replicas[tp] if leaving(b)]
            led_by_gone = bool(gone) and self.replicas[tp][0] in gone
            for src in gone:
                dst = self._destination(tp, leaving)
                if dst is None:
                    if strict:
                        raise PlanError(f"partition {topic}-{tp[1]} has {len(self.replicas[tp])} replicas but only "
                                        f"{len(self.live)} brokers would remain")
                    continue
                self.move((tp, src, dst))
            if new_leaders and led_by_gone and not leaving(self.replicas[tp][0]):
                self._choose_leader(tp, self.replicas[tp][0])

    def _destination(self, tp: Partition, leaving: Callable[[int], bool]) -> int | None:
        racks = self._rack_counts(tp, leaving)
        topic_count = self.count[tp[0]]
        candidates = [b for b in self.live if b not in self.replicas[tp]]
        if not candidates:
            return None
        return min(candidates, key=lambda b: (racks[self.rack(b)], topic_count[b], self.total[b], b))

    def _choose_leader(self, tp: Partition, newcomer: int) -> None:
        """The replica of ``tp`` leading fewest of its topic (then fewest in all) becomes its preferred
        leader; an existing replica wins a tie over the one just moved in."""
        replicas = self.replicas[tp]
        leads = self.leads[tp[0]]
        best = min(replicas, key=lambda b: (leads[b] - (b == replicas[0]), self.total_leads[b] - (b == replicas[0]),
                                            b == newcomer, replicas.index(b)))
        if best != replicas[0]:
            self.prefer((tp, replicas[0], best))

    def spread_racks(self, topic: str) -> None:
        """Move replicas out of a partition's fullest rack into its emptiest one while that makes the
        spread strictly more even (two or more apart)."""
        if not self.racks_matter:
            return
        live = set(self.live)
        count = self.count[topic]
        for tp in self.partitions[topic]:
            while True:
                racks = self._rack_counts(tp)
                replicas = self.replicas[tp]
                best: tuple[tuple[int, ...], _Step] | None = None
                for src in replicas:
                    if src not in live:
                        continue
                    for dst in self.live:
                        if dst in replicas:
                            continue
                        gain = racks[self.rack(src)] - racks[self.rack(dst)]
                        if gain < 2:
                            continue
                        key = (-gain, src == replicas[0], -count[src], count[dst], self.total[dst], src, dst)
                        if best is None or key < best[0]:
                            best = (key, (tp, src, dst))
                if best is None:
                    break
                self.move(best[1])

    # -- balancing ---------------------------------------------------------------------------------

    def balance_replicas(self, topic: str) -> None:
        """Each live broker ends with the topic's even share of replicas, give or take one (as far as the
        racks allow; brokers of one rack always end within one of each other)."""
        count = self.count[topic]

        def find(src: int, dst: int, used: set[Partition]) -> _Step | None:
            return self._replica_step(topic, src, dst, used)

        for nodes in self._node_groups():
            self._balance(nodes, count.__getitem__, self.total.__getitem__, find, self.move)

    def balance_total_replicas(self) -> None:
        """Brokers end with even shares of all replicas, by moves that each keep their topic's spread (a
        replica of a topic moves only to a broker holding fewer of that topic)."""

        def find(src: int, dst: int, used: set[Partition]) -> _Step | None:
            best: tuple[int, _Step] | None = None
            for topic in self.topic_names:
                gap = self.count[topic][src] - self.count[topic][dst]
                if gap > 0 and (best is None or gap > best[0]):
                    step = self._replica_step(topic, src, dst, used)
                    if step is not None:
                        best = (gap, step)
            return None if best is None else best[1]

        for nodes in self._node_groups():
            self._balance(nodes, self.total.__getitem__, lambda b: 0, find, self.move)

    def _replica_step(self, topic: str, src: int, dst: int, used: set[Partition]) -> _Step | None:
        """The best of the topic's replicas on ``src`` to move to ``dst``: one that keeps the racks spread,
        preferably one whose preferred leadership moving along evens the leaders out."""
        best: tuple[tuple[int, int], Partition] | None = None
        for tp in self.holding[topic].get(src, ()):
            if tp in used or dst in self.replicas[tp] or not self._rack_ok(tp, src, dst):
                continue
            key = (self._leader_effect(tp, src, dst), tp[1])
            if best is None or key < best[0]:
                best = (key, tp)
        return None if best is None else (best[1], src, dst)

    def _node_groups(self) -> list[list[int]]:
        """All live brokers, then (when racks matter) the brokers of each rack, for the balancing passes:
        where racks keep some brokers from their even share, the others of a rack still share evenly."""
        groups = [self.live]
        if self.racks_matter:
            by_rack: dict[str, list[int]] = {}
            for b in self.live:
                by_rack.setdefault(self.rack(b), []).append(b)
            groups += [members for _, members in sorted(by_rack.items()) if len(members) > 1]
        return groups

    def balance_leaders(self, topic: str) -> None:
        """Each live broker is the preferred leader of the topic's even share of partitions, give or take
        one, by reordering replica lists (a partition already in the plan is reordered first)."""

        def find(src: int, dst: int, used: set[Partition]) -> _Step | None:
            return self._leader_step(topic, src, dst, used)

        self._balance(self.live, self.leads[topic].__getitem__, self.total_leads.__getitem__, find, self.prefer)

    def balance_total_leaders(self) -> None:
        """Brokers lead even shares of all partitions as far as reorders that each keep their topic's leader
        spread can take them."""

        def find(src: int, dst: int, used: set[Partition]) -> _Step | None:
            best: tuple[int, _Step] | None = None
            for topic in self.topic_names:
                gap = self.leads[topic][src] - self.leads[topic][dst]
                if gap > 0 and (best is None or gap > best[0]):
                    step = self._leader_step(topic, src, dst, used)
                    if step is not None:
                        best = (gap, step)
            return None if best is None else best[1]

        self._balance(self.live, self.total_leads.__getitem__, lambda b: 0, find, self.prefer)

    def _leader_step(self, topic: str, src: int, dst: int, used: set[Partition]) -> _Step | None:
        """A partition of the topic led by ``src`` with a replica on ``dst`` (one already in the plan first)."""
        candidates = [tp for tp in self.leading[topic].get(src, ()) if tp not in used and dst in self.replicas[tp]]
        if not candidates:
            return None
        return min(candidates, key=lambda tp: (tuple(self.replicas[tp]) == self.original[tp], tp[1])), src, dst

    def _leader_effect(self, tp: Partition, src: int, dst: int) -> int:
        """Moving ``src``'s replica to ``dst`` hands over its preferred leadership when it leads ``tp``:
        -1 when that evens the topic's leaders out, 0 when it changes nothing, 1 when it makes them less
        even."""
        if self.replicas[tp][0] != src:
            return 0
        leads = self.leads[tp[0]]
        diff = leads[src] - leads[dst]
        return -1 if diff >= 2 else 0 if diff == 1 else 1

    def _balance(self, nodes: Sequence[int], load: Callable[[int], int], weight: Callable[[int], int], find: _Find,
                 apply: Callable[[_Step], None]) -> None:
        """Bring every one of ``nodes``' ``load`` within [share, share + 1] by augmenting paths of ``find``
        steps: first out of the brokers above share + 1, then into the brokers below the share.
        ``weight`` breaks ties (a heavier broker gives first, a lighter one takes first)."""
        lo, extra = divmod(sum(load(b) for b in nodes), len(nodes))
        hi = lo + (1 if extra else 0)

        def takers() -> list[int]:
            return sorted(nodes, key=lambda b: (load(b), weight(b), b))

        def givers(above: int) -> list[int]:
            return sorted((b for b in nodes if load(b) > above), key=lambda b: (-load(b), -weight(b), b))

        stuck: set[int] = set()
        while over := [b for b in givers(hi) if b not in stuck]:
            src = over[0]
            path = _path([src], lambda b: load(b) < lo, takers(), find)
            if path is None and hi > lo:
                path = _path([src], lambda b: load(b) < hi, takers(), find)
            if path is None:
                stuck.add(src)
                continue
            for step in path:
                apply(step)
        stuck = set()
        while under := [b for b in takers() if load(b) < lo and b not in stuck]:
            dst = under[0]
            path = _path(givers(lo), {dst}.__contains__, takers(), find)
            if path is None:
                stuck.add(dst)
                continue
            for step in path:
                apply(step)


def _path(sources: Iterable[int], is_sink: Callable[[int], bool], nodes: Sequence[int],
          find: _Find) -> list[_Step] | None:
    """The shortest chain of steps from one of ``sources`` to a sink, breadth first.  A chain uses each
    broker and each partition once, so its steps stay valid in any order and only its ends change load."""
    starts = list(sources)
    seen = set(starts)
    queue: deque[tuple[int, list[_Step]]] = deque((s, []) for s in starts)
    while queue:
        node, path = queue.popleft()
        used = {step[0] for step in path}
        for nxt in nodes:
            if nxt in seen:
                continue
            step = find(node, nxt, used)
            if step is None:
                continue
            if is_sink(nxt):
                return [*path, step]
            seen.add(nxt)
            queue.append((nxt, [*path, step]))
    return None
