"""Fault injection for the in-process broker: make an API fail, slow down, or drop connections.

Users' test suites call this through :attr:`broker.Broker.faults` to check
how their consumers and producers handle broker errors::

    broker.faults.inject("Fetch", error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, times=3)
    broker.faults.inject("Produce", latency_ms=200)
    broker.faults.inject("Heartbeat", drop_connection=True, times=1)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from protocol.api import APIS, ApiKey


@dataclass
class Fault:
    api_key: int
    error_code: int | None = None
    latency_ms: int = 0
    drop_connection: bool = False
    remaining: int | None = 1

    @property
    def exhausted(self) -> bool:
        return self.remaining is not None and self.remaining <= 0


def resolve_api(api: int | str) -> int:
    if isinstance(api, int):
        return int(api)
    wanted = api.replace("_", "").lower()
    for key, entry in APIS.items():
        if entry.name.lower() == wanted or ApiKey(key).name.replace("_", "").lower() == wanted:
            return key
    raise ValueError(f"unknown API {api!r}")


class FaultInjector:
    """Armed faults, consumed in order per API; thread-safe so BrokerThread users can arm them."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.active = False

    def inject(self, api: int | str, *, error_code: int | None = None, latency_ms: int = 0,
               drop_connection: bool = False, times: int | None = 1) -> Fault:
        """Arm a fault for the next ``times`` requests of ``api`` (``None`` = until cleared)."""
        fault = Fault(resolve_api(api), None if error_code is None else int(error_code), latency_ms,
                      drop_connection, times)
        with self._lock:
            self._faults.append(fault)
            self.active = True
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self.active = False

    def intercept(self, api_key: int) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.api_key == api_key and not fault.exhausted:
                    if fault.remaining is not None:
                        fault.remaining -= 1
                    self._faults = [f for f in self._faults if not f.exhausted]
                    self.active = bool(self._faults)
                    return fault
        return None
