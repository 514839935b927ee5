"""Classic consumer-group coordinator: a pure state machine the asyncio edge drives.

Public API::

    coord = GroupCoordinator(GroupConfig(), now_ms=clock(), partition_count=lookup)
    fx = coord.join_group(now_ms, api_version, request, reply_token, client_id=..., client_host=...)
    fx = coord.handle(api_key, now_ms, api_version, request, reply_token)   # any group API
    fx = coord.poll(now_ms)                       # when fx.next_deadline_ms has passed
    coord.load(partition, key, value); fx = coord.complete_load(now_ms)     # startup replay

Every call returns :class:`Effects`: append ``records`` to ``__consumer_offsets`` first, then
send ``replies`` (token → response dict with the schema's snake_case fields for that version),
then sleep until ``next_deadline_ms``.  See :mod:`broker.group.coordinator` for the state table.

Timers live inside the coordinator (:class:`broker.group.timers.KeyedTimers` over
``protocol.timing_wheel.TimingWheel``) keyed ``("heartbeat", group, member)``, ``("pending", group,
member)``, ``("join", group)``, ``("initial-delay", group)``, ``("sync", group)`` and
``("retention",)``; the edge only needs ``next_deadline_ms`` / :meth:`GroupCoordinator.next_deadline`.

Known gaps versus Kafka: no rollback of in-memory state when the append fails (the edge should
treat a failed ``__consumer_offsets`` append as fatal for the coordinator, or reload); reads see
not-yet-appended state; no transactional offset commits; no KIP-848 groups.
"""

from .config import GroupConfig
from .coordinator import Effects, GroupCoordinator
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
    "coordinator_partition",
    "java_string_hashcode",
]
