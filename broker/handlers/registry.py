"""The handler registry: every API the broker serves, the versions it serves, and its handler.

A handler module registers its API once, next to its code::

    @handles(ApiKey.HEARTBEAT, versions=(0, 4))
    def heartbeat(s: Services, ctx: RequestContext, req: Obj) -> Reply: ...

One calling convention: a handler gets the broker's services (:class:`~broker.handlers.services.Services`),
the request's context and its decoded body, and returns the response body (:data:`Reply`: ``None``
when the API answers nothing, as acks=0 Produce) — or, when it must wait (a write being replicated,
a long-poll fetch, another broker's answer), an awaitable of it.  Only the dispatcher tells the two
apart.  ApiVersions advertises exactly the registered versions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from protocol.api import APIS, ApiKey
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

__all__ = ["HANDLERS", "ApiHandler", "Handler", "Reply", "api_versions_entries", "handles"]

#: a response body now (None: the request gets no response)
Reply: TypeAlias = Obj | None
Handler: TypeAlias = Callable[["Services", "RequestContext", Obj], "Reply | Awaitable[Reply]"]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    key: ApiKey
    min_version: int
    max_version: int
    handle: Handler
    #: the lowest version ApiVersions advertises, when lower than ``min_version`` (see ``handles``)
    advertised_min: int

    @property
    def name(self) -> str:
        return APIS[self.key].name


#: API key -> its handler; filled as the handler modules are imported (``broker.handlers.all``)
HANDLERS: dict[int, ApiHandler] = {}


def handles(key: ApiKey, *, versions: tuple[int, int], advertise_from: int | None = None) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``key`` for ``versions`` (inclusive).

    ``advertise_from``: advertise a lower minimum than is served (KAFKA-18659: librdkafka turns
    compression off unless Produce advertises version 0; older versions are still refused)."""
    low, high = versions
    api = APIS[key]
    if not api.min_version <= low <= high <= api.max_version:
        raise ValueError(f"{api.name} v{low}-{high}: the codec covers only v{api.min_version}-{api.max_version}")

    def register(fn: Handler) -> Handler:
        if key in HANDLERS:
            raise ValueError(f"{api.name} registered twice")
        HANDLERS[key] = ApiHandler(key, low, high, fn, low if advertise_from is None else advertise_from)
        _advertised.clear()
        return fn

    return register


_advertised: list[dict[str, int]] = []


def api_versions_entries() -> list[dict[str, int]]:
    """ApiVersions' list: every registered API with the versions it serves (built once)."""
    if not _advertised:
        _advertised.extend({"api_key": int(h.key), "min_version": h.advertised_min, "max_version": h.max_version}
                           for _, h in sorted(HANDLERS.items()))
    return _advertised
