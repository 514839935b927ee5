"""SecurityAdmin: users (SCRAM credentials) and ACLs as cluster metadata, from any broker.

Users live under ``users/<name>`` and ACL bindings under ``acls/...`` in the metadata store (the
local store of a single broker, etcd in a cluster).  Every broker mirrors them from its metadata
image into its :class:`~broker.security.scram.CredentialStore` (what SASL checks) and its
:class:`~broker.security.acl.Authorizer` (what requests are checked against): :meth:`on_metadata`
follows each delta, so a change made through any broker takes effect on all of them.

The admin APIs plan against the mirror with the security cores' rules (KIP-554 for
AlterUserScramCredentials; Kafka's CreateAcls / DeleteAcls rules), then write the affected keys in
compare-and-set transactions guarded by the revisions the image holds; a write that lost a race is
planned again from the newer image.  Answers wait until this broker's image has the write, so a
describe right after a change sees it.  ``sasl.users.file`` seeds users at start the same way
(:meth:`seed_users`); passwords are never logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from broker.cluster.image import MetadataDelta, MetadataImage
from broker.cluster.kv import KVError
from broker.security.acl import AclBinding, AclBindingFilter, Authorizer
from broker.security.scram import CredentialStore, UserRecord, user_key
from protocol.error_codes import ErrorCode

log = logging.getLogger("kbroker.security")

__all__ = ["SecurityAdmin", "SecurityStoreError"]

E = ErrorCode
#: keys written per store transaction (etcd refuses more than 128 operations in one)
TXN_KEYS = 64
#: compare-and-set rounds before giving up on a busy key
ATTEMPTS = 10
WRITE_VISIBLE_S = 10.0


class SecurityStoreError(Exception):
    """The metadata store did not take the write (unreachable, or too much contention)."""


class SecurityStore(Protocol):
    """What SecurityAdmin needs from the metadata service."""

    image: MetadataImage

    async def write_records(self, values: Mapping[str, bytes | None], expected: Mapping[str, int]) -> int | None: ...

    async def wait_for_revision(self, revision: int, timeout_s: float) -> bool: ...


class SecurityAdmin:
    def __init__(self, store: SecurityStore, credentials: CredentialStore, authorizer: Authorizer) -> None:
        self.store = store
        self.image = store.image
        self.credentials = credentials
        self.authorizer = authorizer
        self._installed: dict[str, AclBinding] = {}

    # -- the mirror ------------------------------------------------------------------
    def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Bring the credential store and the authorizer to the image's users and ACLs."""
        if delta.full:
            gone: dict[str, UserRecord | None] = {n: None for n in self.credentials.users() if n not in image.users}
            self.credentials.apply({**gone, **image.users})
            self._installed = dict(image.acls)
            self.authorizer.replace_all(image.acls.values())
            return
        if delta.users_changed:
            self.credentials.apply({name: image.users.get(name) for name in delta.users_changed})
        if delta.acls_changed:
            added, removed = [], []
            for key in delta.acls_changed:
                new = image.acls.get(key)
                old = self._installed.pop(key, None)
                if old is not None and old != new:
                    removed.append(old)
                if new is not None:
                    self._installed[key] = new
                    if new != old:
                        added.append(new)
            self.authorizer.remove(removed)
            self.authorizer.add(added)

    # -- writing -----------------------------------------------------------------------
    async def _write(self, values: Mapping[str, bytes | None], expected: Mapping[str, int]) -> bool:
        """Write in chunks; False when a chunk lost a race (plan again)."""
        items = list(values.items())
        revision = 0
        for start in range(0, len(items), TXN_KEYS):
            chunk = dict(items[start:start + TXN_KEYS])
            try:
                written = await self.store.write_records(chunk, {k: expected.get(k, 0) for k in chunk})
            except KVError as exc:
                raise SecurityStoreError(f"the metadata store is unavailable: {exc}") from None
            if written is None:
                await self.store.wait_for_revision(self.image.revision + 1, 0.5)
                return False
            revision = max(revision, written)
        if revision and not await self.store.wait_for_revision(revision, WRITE_VISIBLE_S):
            raise SecurityStoreError("the write did not come back from the metadata store in time")
        return True

    # -- users (KIP-554) ---------------------------------------------------------------
    async def alter_user_scram_credentials(self, deletions: Sequence[Mapping[str, Any]],
                                           upsertions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """AlterUserScramCredentialsResponse ``results``."""
        for _ in range(ATTEMPTS):
            plan = self.credentials.plan_alter(deletions, upsertions)
            if not plan.updates:
                return plan.results
            try:
                if await self._write_users(plan.updates):
                    return plan.results
            except SecurityStoreError as exc:
                return self._users_failed(plan.results, plan.updates, str(exc))
        return self._users_failed(plan.results, plan.updates, "too many concurrent changes; try again")

    @staticmethod
    def _users_failed(results: list[dict[str, Any]], updates: Mapping[str, Any], message: str) -> list[dict[str, Any]]:
        return [{**r, "error_code": int(E.UNKNOWN_SERVER_ERROR), "error_message": message}
                if r["user"] in updates else r for r in results]

    async def _write_users(self, updates: Mapping[str, UserRecord | None]) -> bool:
        values = {user_key(name): None if record is None else record.encode() for name, record in updates.items()}
        expected = {user_key(name): self.image.user_revisions.get(name, 0) for name in updates}
        return await self._write(values, expected)

    def describe_user_scram_credentials(self, users: Sequence[Any] | None) -> list[dict[str, Any]]:
        return self.credentials.describe(users)

    async def seed_users(self, entries: Iterable[tuple[str, str]]) -> int:
        """Make the users of ``sasl.users.file`` log in with its passwords; returns how many changed."""
        entries = list(entries)
        for _ in range(ATTEMPTS):
            updates = self.credentials.seed(entries)
            if not updates:
                return 0
            if await self._write_users(updates):
                log.info("sasl.users.file: %d of %d user(s) created or given new credentials", len(updates),
                         len(entries))
                return len(updates)
        raise SecurityStoreError("sasl.users.file: the users changed under the seeding too often")

    # -- ACLs --------------------------------------------------------------------------
    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[tuple[ErrorCode, str | None]]:
        """CreateAcls: a (code, message) per binding, in order."""
        results: list[tuple[ErrorCode, str | None]] = []
        for _ in range(ATTEMPTS):
            results, to_add = self.authorizer.plan_create(bindings)
            if not to_add:
                return results
            try:
                if await self._write({b.key(): b.encode() for b in to_add}, {}):
                    return results
            except SecurityStoreError as exc:
                return [(E.UNKNOWN_SERVER_ERROR, str(exc)) if code == E.NONE else (code, message)
                        for code, message in results]
        return [(E.UNKNOWN_SERVER_ERROR, "too many concurrent changes; try again") if code == E.NONE
                else (code, message) for code, message in results]

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return self.authorizer.acls(acl_filter)

    async def delete_acls(self, filters: Sequence[AclBindingFilter]
                          ) -> list[tuple[ErrorCode, str | None, list[AclBinding]]]:
        """DeleteAcls: per filter (code, message, the bindings it deleted)."""
        results: list[tuple[ErrorCode, str | None, list[AclBinding]]] = []
        for _ in range(ATTEMPTS):
            results, to_remove = self.authorizer.plan_delete(filters)
            if not to_remove:
                return results
            keys = {b.key(): None for b in to_remove}
            expected = {key: self.image.acl_revisions.get(key, 0) for key in keys}
            try:
                if await self._write(keys, expected):
                    return results
            except SecurityStoreError as exc:
                return [(E.UNKNOWN_SERVER_ERROR, str(exc), []) if code == E.NONE else (code, message, matched)
                        for code, message, matched in results]
        return [(E.UNKNOWN_SERVER_ERROR, "too many concurrent changes; try again", []) if code == E.NONE
                else (code, message, matched) for code, message, matched in results]
