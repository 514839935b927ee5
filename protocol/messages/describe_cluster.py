"""DescribeCluster (API key 60): the shapes of the messages, for type checkers and IDEs.

Generated from Apache Kafka's message specs by ``protocol/_schema_gen.py``, beside the codecs'
schema ``protocol/schemas/describe_cluster.py``; do not edit.  Each ``TypedDict`` is one message or
struct; each key is documented with the spec's ``about`` text and the versions it exists in.
Every key may be left out (``total=False``): the encoder sends a missing field as its default,
as Kafka's generated message classes do.  Annotate what you build::

    body: DescribeClusterRequestData = {...}
"""

from __future__ import annotations

from typing import TypedDict


class DescribeClusterRequestData(TypedDict, total=False):
    """DescribeClusterRequest (API key 60): versions 0-2, flexible from 0."""

    include_cluster_authorized_operations: bool
    """Whether to include cluster authorized operations. (versions 0+)"""

    endpoint_type: int
    """The endpoint type to describe. 1=brokers, 2=controllers. (versions 1+; default 1)"""

    include_fenced_brokers: bool
    """Whether to include fenced brokers when listing brokers. (versions 2+)"""


class DescribeClusterResponseData(TypedDict, total=False):
    """DescribeClusterResponse (API key 60): versions 0-2, flexible from 0."""

    throttle_time_ms: int
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota. (versions 0+)"""

    error_code: int
    """The top-level error code, or 0 if there was no error. (versions 0+)"""

    error_message: str | None
    """The top-level error message, or null if there was no error. (versions 0+; nullable 0+; default null)"""

    endpoint_type: int
    """The endpoint type that was described. 1=brokers, 2=controllers. (versions 1+; default 1)"""

    cluster_id: str
    """The cluster ID that responding broker belongs to. (versions 0+)"""

    controller_id: int
    """The ID of the controller broker. (versions 0+; default -1)"""

    brokers: list[DescribeClusterBroker]
    """Each broker in the response. (versions 0+)"""

    cluster_authorized_operations: int
    """32-bit bitfield to represent authorized operations for this cluster. (versions 0+; default -2147483648)"""


class DescribeClusterBroker(TypedDict, total=False):
    """An element of ``DescribeClusterResponseData.brokers``: Each broker in the response."""

    broker_id: int
    """The broker ID. (versions 0+)"""

    host: str
    """The broker hostname. (versions 0+)"""

    port: int
    """The broker port. (versions 0+)"""

    rack: str | None
    """The rack of the broker, or null if it has not been assigned to a rack. (versions 0+; nullable 0+; default null)"""

    is_fenced: bool
    """Whether the broker is fenced (versions 2+)"""
