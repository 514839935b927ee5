"""The group coordinator: classic and KIP-848 consumer groups and their committed offsets, as a pure state machine.

One shard per ``__consumer_offsets`` partition (Kafka's ``GroupCoordinatorShard``), composed as Kafka's:

* :mod:`~broker.coordinator.group.coordinator` — :class:`GroupCoordinator`, the shard: the API entry
  points, group deletion and offset expiry (which span both managers), and :meth:`GroupCoordinator.replay`,
  the one path records take into the state, on load and when a write commits;
* :mod:`~broker.coordinator.group.membership` — ``GroupMetadataManager``: classic groups (their state
  table) and the shard's KIP-848 :mod:`~broker.coordinator.group.consumer_group` groups;
* :mod:`~broker.coordinator.group.offsets` — ``OffsetMetadataManager``: committed and transactional offsets;
* :mod:`~broker.coordinator.group.writes` — what a call yields (:class:`Effects`) and the writes in flight;
* :mod:`~broker.coordinator.group.records` — the ``__consumer_offsets`` records, encoded and decoded;
* :mod:`~broker.coordinator.group.service` — the asyncio service the request handlers call.

Public API::

    coord = GroupCoordinator(GroupConfig(), now_ms=clock(), partition_count=lookup)
    fx = coord.join_group(now_ms, api_version, request, reply_token, client_id=..., client_host=...)
    fx = coord.handle(api_key, now_ms, api_version, request, reply_token)   # any group API
    fx = coord.poll(now_ms)                       # when fx.next_deadline_ms has passed
    coord.load(partition, key, value); fx = coord.complete_load(now_ms)     # startup replay

    fx = coord.write_committed(now_ms, write_id)  # a write of fx.writes is durable
    fx = coord.write_failed(now_ms, write_id, error_code)   # ... or its append failed

Every call returns :class:`Effects`: send ``replies`` (token → response dict with the schema's
snake_case fields for that version), append each of ``writes`` (one ``__consumer_offsets``
partition each) and report its outcome with ``write_committed`` / ``write_failed`` — the replies
that depend on a write (OffsetCommit, the SyncGroup that stores an assignment, DeleteGroups, ...)
come out of that call — then sleep until ``next_deadline_ms``.  See
:mod:`broker.coordinator.group.coordinator` for the write contract.

Timers live inside the shard (:class:`broker.coordinator.group.timers.KeyedTimers` over
``protocol.timing_wheel.TimingWheel``) keyed ``("heartbeat", group, member)``, ``("pending", group,
member)``, ``("join", group)``, ``("initial-delay", group)``, ``("sync", group)`` and
``("retention",)``; the edge only needs ``next_deadline_ms`` / :meth:`GroupCoordinator.next_deadline`.

Writes follow Kafka 4.x's coordinator runtime: committed offsets change, a group becomes Stable
after SyncGroup, and a deleted group disappears only when the write that carries the change is
committed; OffsetFetch, DescribeGroups and ListGroups read that committed state; a failed write
changes nothing stored and answers every request that waited on it with Kafka's mapped error.

KIP-848 consumer groups revert to their stored state when a write carrying their records fails, as
Kafka's runtime does.  Known gap versus Kafka: classic-group membership (joins, leaves, expiries, a
group left Empty) lives in memory and is not rolled back when the write that persists it fails —
the next successful group write carries it; a write that fails is not retried.
"""

from .config import GroupConfig
from .coordinator import Effects, GroupCoordinator, Write, commit_error, group_write_error
from .model import Group, GroupState, Member, OffsetEntry
from .partitioning import coordinator_partition, java_string_hashcode

__all__ = [
    "Effects",
    "Group",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "Member",
    "OffsetEntry",
    "Write",
    "commit_error",
    "coordinator_partition",
    "group_write_error",
    "java_string_hashcode",
]
