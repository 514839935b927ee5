"""Console sessions: who is logged in, their CSRF token, and when they end (sans-IO: the clock is given).

A session is created on the first visit (an open console's too, so its forms carry a CSRF token) and
named by a random id in an HttpOnly, SameSite=Strict cookie — never in a URL.  A login replaces the
session (a new id: no fixation).  Sessions unused for ``timeout_s`` end; beyond ``max_sessions`` the
least recently used ends.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConsoleSession", "SessionStore"]


@dataclass(slots=True)
class ConsoleSession:
    id: str
    csrf: str
    last_used: float
    #: the logged-in principal (``User:alice``), or None
    principal: str | None = None
    #: the principal's authorization session (None: authorizer off, or not logged in)
    authz: Any = None
    #: one-time messages shown on the next page (the result of an action)
    flashes: list[tuple[str, str]] = field(default_factory=list)

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.csrf.encode())


class SessionStore:
    def __init__(self, clock: Callable[[], float], *, timeout_s: float, max_sessions: int) -> None:
        self.clock = clock
        self.timeout_s = timeout_s
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, ConsoleSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str | None) -> ConsoleSession | None:
        """The live session named ``session_id`` (its use noted), or None."""
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self.clock()
        if now - session.last_used > self.timeout_s:
            del self._sessions[session_id]
            return None
        session.last_used = now
        self._sessions.move_to_end(session_id)
        return session

    def new(self, principal: str | None = None, authz: Any = None) -> ConsoleSession:
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        session = ConsoleSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32), self.clock(), principal, authz)
        self._sessions[session.id] = session
        return session

    def end(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def end_principal(self, principal: str) -> None:
        """End every session of ``principal`` (its user was deleted)."""
        for sid in [sid for sid, s in self._sessions.items() if s.principal == principal]:
            del self._sessions[sid]
