"""What the console is given by the composition root (:class:`ConsoleSources`), and its settings
(:class:`ConsoleSettings`, built from ``console.*``).  Narrow on purpose: the console never sees the
broker object, only these readers and the request path."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.observability.history import MetricsHistory
    from broker.security.acl import AuthorizationSession
    from protocol.primitives import Obj

__all__ = ["ConsoleSettings", "ConsoleSources", "LocalPartition", "Requester"]


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    host: str
    port: int
    refresh_ms: int = 5000
    session_timeout_ms: int = 3_600_000
    max_sessions: int = 1000
    page_size: int = 100
    records_max: int = 500
    record_view_bytes: int = 4096
    #: the broker's listeners require SASL: the console requires a login with the same users
    login_required: bool = False
    #: a failed login is answered only after this delay (as a failed SASL login is)
    failed_login_delay_ms: int = 100


@dataclass(frozen=True, slots=True)
class LocalPartition:
    """A replica this broker hosts: its log's offsets and size."""

    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    size_bytes: int
    is_leader: bool


#: ``request(session, node, api_key, version, body)``: a Kafka request made as the session's principal
#: (None: authorization off), handled by broker ``node`` (None: this one) — authorized here either way
Requester = Callable[["AuthorizationSession | None", "int | None", int, int, dict[str, Any]], Awaitable["Obj"]]


@dataclass(slots=True)
class ConsoleSources:
    node_id: int
    #: the metadata image this broker keeps (read on the event loop; never changed by the console)
    image: Callable[[], MetadataImage]
    cluster_id: Callable[[], str]
    request: Requester
    #: the log of a partition hosted here, or None
    local_partition: Callable[[str, int], LocalPartition | None]
    history: MetricsHistory
    #: ``(user, password)`` -> whether they match the broker's SASL credentials (runs off the loop)
    check_password: Callable[[str, str], Awaitable[bool]]
    #: whether the principal's user still exists (a deleted user's console logins end)
    user_exists: Callable[[str], bool]
    #: ``(principal, client host)`` -> its authorization session (None: the authorizer is off)
    new_session: Callable[[str, str], AuthorizationSession | None]
    #: whether the authorizer is on (the security page says so)
    authorizer_enabled: bool = False
    #: where this broker's Kafka listeners are (shown on the brokers page)
    listeners: tuple[str, ...] = ()
