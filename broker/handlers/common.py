"""What several handlers share: brokers' addresses per listener, topic-name validity, the
"no authorized operations" marker and the ACL APIs' SECURITY_DISABLED answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.log.errors import InvalidTopicError
from broker.log.manager import validate_topic_name

if TYPE_CHECKING:
    from broker.cluster.image import MetadataImage
    from broker.config.settings import BrokerConfig

__all__ = ["NO_OPERATIONS", "broker_entries", "endpoint", "security_disabled", "too_many_partitions",
           "valid_topic_name"]

#: ``*_authorized_operations`` when they were not asked for (or no authorizer runs)
NO_OPERATIONS = -2147483648


def valid_topic_name(name: Any) -> bool:
    """Kafka's topic-name rule, as the log manager enforces it."""
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


def endpoint(image: MetadataImage, node: int, listener: str) -> tuple[str, int, str | None] | None:
    """A broker's address on ``listener`` (the one the client came in on): host, port, rack."""
    reg = image.brokers.get(node)
    if reg is None:
        return None
    ep = reg.endpoint(listener) or reg.endpoint()
    return None if ep is None else (ep.host, ep.port, reg.rack)


def broker_entries(image: MetadataImage, listener: str) -> list[dict[str, Any]]:
    """Every live broker as Metadata lists them, with its address on ``listener``."""
    out = []
    for node in sorted(image.brokers):
        ep = endpoint(image, node, listener)
        if ep is not None:
            out.append({"node_id": node, "host": ep[0], "port": ep[1], "rack": ep[2]})
    return out


def security_disabled(config: BrokerConfig) -> str | None:
    """Kafka answers the ACL APIs with SECURITY_DISABLED when no authorizer is configured."""
    return None if config.authorizer_enabled else "No Authorizer is configured (authorizer.enabled=false)."


def too_many_partitions(asked: int, config: BrokerConfig) -> str:
    """The POLICY_VIOLATION message of a CreateTopics or CreatePartitions creating more than
    ``max.partitions.per.request`` partitions."""
    return (f"Excessively large number of partitions per request: {asked} asked, at most "
            f"{config.max_partitions_per_request} (max.partitions.per.request).")
