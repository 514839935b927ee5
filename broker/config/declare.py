"""How a broker setting is declared: :class:`Setting` (Kafka's ``ConfigDef.ConfigKey``), its types,
groups and validators.

A setting is declared once, as a field of :class:`broker.config.settings.BrokerConfig` made with
:func:`setting` (``log_retention_ms: int = setting(...)``), or — for Kafka's dynamic configs that have
no setting of their own here — with :func:`dynamic_only`.  Everything else about settings is derived
from these declarations: the loader's known keys and parsing, the dynamic sets, DescribeConfigs'
types, sensitivity, synonyms and documentation, and the README's settings tables
(:mod:`broker.config.docs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = [
    "BOOLEAN", "CLASS", "DOUBLE", "INT", "LIST", "LONG", "PASSWORD", "SHORT", "STRING", "TYPE_NAMES",
    "ConfigError", "Dynamic", "Group", "Setting", "Validator", "at_least", "between", "dynamic_only", "one_of",
    "setting",
]

# Kafka's ConfigDef.Type ids, as DescribeConfigs (v3+) reports them.
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = 1, 2, 3, 4, 5, 6, 7, 8, 9
TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", SHORT: "SHORT", LONG: "LONG", DOUBLE: "DOUBLE",
              LIST: "LIST", CLASS: "CLASS", PASSWORD: "PASSWORD"}

_BINARY_UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
_DAY = 86_400_000
_UNBOUNDED = (2**63 - 1, 2**31 - 1)

#: field metadata key under which :func:`setting` keeps a field's declaration
DECLARATION = "setting"


class ConfigError(ValueError):
    """A setting that does not exist or a value that does not parse (``python -m broker`` exits 2)."""


class Dynamic(Enum):
    """Whether a setting changes at run time (IncrementalAlterConfigs / AlterConfigs on a broker)."""

    #: read when the broker starts; changing it dynamically is refused
    NO = "no"
    #: changed at run time, per broker or as the cluster-wide default, and applied at once
    YES = "yes"
    #: Kafka's dynamic config, accepted, stored and reported, with nothing to tune here
    STORED = "stored only"


class Group(Enum):
    """The part of the broker a setting belongs to (the README has one table per group)."""

    PROCESS = "The broker process"
    LIMITS = "Connections and requests"
    TOPICS = "Topics"
    LOG = "Logs: the broker-level defaults of topic configs"
    COMPACTION = "Log compaction"
    GROUPS = "Consumer groups and offsets"
    CONSUMER_GROUPS = "KIP-848 consumer groups"
    SHARE_GROUPS = "KIP-932 share groups"
    TRANSACTIONS = "Transactions"
    CLUSTER = "Cluster"
    REPLICATION = "Replication"
    SECURITY = "Listeners and security"
    CONSOLE = "The web console"
    STORED = "Kafka's dynamic configs stored without effect"


#: a value check: raises ValueError with what the value must be ("must be at least 1")
Validator = Callable[[Any], None]


def at_least(low: int, message: str | None = None) -> Validator:
    """At least ``low`` (``message``: what to say otherwise, "must be at least <low>" if not given)."""
    def check(value: Any) -> None:
        if value is not None and value < low:
            raise ValueError(message or f"must be at least {low}")

    return check


def between(low: int, high: int) -> Validator:
    """From ``low`` to ``high``, both included."""
    def check(value: Any) -> None:
        if value is not None and not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}")

    return check


def one_of(*allowed: Any) -> Validator:
    """One of ``allowed``."""
    def check(value: Any) -> None:
        if value not in allowed:
            raise ValueError("must be one of " + ", ".join(repr(a) for a in allowed if a is not None and a != ""))

    return check


@dataclass(frozen=True)
class Setting:
    """One broker setting (see the module docstring).

    ``topic``: the topic config this setting gives the default of (Kafka's
    ``ServerTopicConfigSynonyms``), and ``units``: Kafka's coarser spellings of a millisecond setting
    (``log.retention.hours``), each with its factor to this setting's unit — accepted as dynamic
    configs, never as static settings.  ``attr``: the :class:`BrokerConfig` attribute (None for a
    dynamic-only config).  ``default_text``: the default as the documentation states it, when the
    value alone does not say it (a default computed from other settings)."""

    name: str
    type: int
    default: Any
    group: Group
    doc: str
    dynamic: Dynamic = Dynamic.NO
    per_broker_only: bool = False
    validator: Validator | None = None
    topic: str | None = None
    units: tuple[tuple[str, int], ...] = ()
    attr: str | None = None
    nullable: bool = False
    default_text: str | None = None
    #: the default of ``python -m broker`` where it differs from the embedded broker's (``default``)
    command_default: Any = None
    #: the coarser spelling's factor to the setting it spells (``log.retention.hours`` -> 3600000), else 1
    factor: int = 1
    #: the setting this one is a coarser spelling of (``log.retention.hours`` -> ``log.retention.ms``)
    spelling_of: str | None = None

    @property
    def sensitive(self) -> bool:
        """A secret (Kafka's PASSWORD type): never in ``repr`` or logs; DescribeConfigs hides its value."""
        return self.type == PASSWORD

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type]

    @property
    def plain_doc(self) -> str:
        """The documentation without the README's markup."""
        return self.doc.replace("`", "")

    @property
    def shown_default(self) -> str:
        """The default as the documentation states it (``7 days``, ``64 MiB``, ``unbounded``, ``none``)."""
        value = self.default
        if self.default_text is not None:
            return self.default_text
        if self.command_default is not None:
            return f"{self.command_default} (none in an embedded broker)"
        if value is None:
            return "not set" if self.dynamic is Dynamic.STORED else "none"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return f"`{value}`" if value else "empty"
        if isinstance(value, int):
            if value in _UNBOUNDED:
                return "unbounded"
            if self.name.endswith((".bytes", ".size", ".bytes.per.connection")):
                for size, unit in _BINARY_UNITS:
                    if value >= size and value % size == 0:
                        return f"{value // size} {unit}"
            if self.name.endswith(".ms") and value >= _DAY and value % _DAY == 0:
                days = value // _DAY
                return f"{days} day{'s' if days > 1 else ''}"
        return str(value)

    @property
    def is_dynamic(self) -> bool:
        return self.dynamic is not Dynamic.NO

    def check(self, value: Any) -> None:
        """Run the validator (ValueError saying what the value must be)."""
        if self.validator is not None:
            self.validator(value)


def setting(default: Any, type: int, group: Group, doc: str, *, dynamic: Dynamic = Dynamic.NO,
            validator: Validator | None = None, topic: str | None = None,
            units: tuple[tuple[str, int], ...] = (), default_text: str | None = None,
            command_default: Any = None) -> Any:
    """The declaration of a :class:`BrokerConfig` field (its name and attribute come from the field).
    A PASSWORD setting stays out of ``repr``."""
    declared = Setting("", type, default, group, doc, dynamic, False, validator, topic, units,
                       default_text=default_text, command_default=command_default)
    return dataclasses.field(default=default, repr=type != PASSWORD, metadata={DECLARATION: declared})


def dynamic_only(name: str, type: int, doc: str, *, validator: Validator | None = None, topic: str | None = None,
                 per_broker_only: bool = False) -> Setting:
    """One of Kafka's dynamic broker configs with no setting here: stored and reported, no effect."""
    return Setting(name, type, None, Group.STORED, doc, Dynamic.STORED, per_broker_only, validator, topic,
                   nullable=True)
