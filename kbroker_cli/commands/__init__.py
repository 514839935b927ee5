"""The command groups of ``kbroker``, one module each, in the order ``kbroker --help`` lists them.

Each module declares its group (``group = CommandGroup(...)``, or ``command = Command(...)`` for a
command without actions such as ``produce``) and one decorated function per command; see
:mod:`kbroker_cli.command`. A new group is a module here and one entry in :data:`TOP_LEVEL`.
"""

from __future__ import annotations

from kbroker_cli.command import TopLevel
from kbroker_cli.commands import (
    acls,
    cluster,
    configs,
    consume,
    groups,
    produce,
    share_groups,
    topics,
    transactions,
    users,
)

TOP_LEVEL: tuple[TopLevel, ...] = (
    topics.group,
    cluster.group,
    groups.group,
    share_groups.group,
    configs.group,
    transactions.group,
    produce.command,
    consume.command,
    acls.group,
    users.group,
)
