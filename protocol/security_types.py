"""Security codes of the wire protocol, shared by the broker and the client (pure).

Kafka's ACL enums (``ResourceType``, ``PatternType``, ``AclOperation``, ``AclPermissionType``: the
codes of CreateAcls / DescribeAcls / DeleteAcls) and SCRAM mechanisms (the codes of
DescribeUserScramCredentials / AlterUserScramCredentials), and :func:`salted_password`, RFC 5802's
``Hi(password, salt, iterations)`` as Kafka computes it (PBKDF2 over the UTF-8 password, no
SASLprep): what an AlterUserScramCredentials upsertion carries, and what the broker derives its
stored keys from.
"""

from __future__ import annotations

import hashlib
from enum import IntEnum
from typing import Any

__all__ = ["AclOperation", "AclPermissionType", "PatternType", "ResourceType", "ScramMechanism", "salted_password"]


class _Coded(IntEnum):
    @classmethod
    def from_code(cls, code: int) -> Any:
        """The member for a wire code; codes Kafka does not define read as UNKNOWN, as in Kafka."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    @classmethod
    def from_name(cls, name: str) -> Any:
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown {cls.__name__} {name!r}") from None


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ScramMechanism(IntEnum):
    """Kafka's SCRAM mechanism type codes (``ScramMechanism.java``; 0 is UNKNOWN)."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def sasl_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size

    @classmethod
    def from_sasl_name(cls, name: str) -> ScramMechanism | None:
        for m in cls:
            if m.sasl_name == name:
                return m
        return None

    @classmethod
    def from_code(cls, code: int) -> ScramMechanism | None:
        try:
            return cls(code)
        except ValueError:
            return None


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, iterations) for ``mechanism`` (RFC 5802 section 3)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)
