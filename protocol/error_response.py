"""The answer a request gets when it fails as a whole: its API's response carrying one error code.

Every place that refuses a request before its handler runs (an unsupported version, a fault
injected, a coordinator not here, a denied principal) answers with :func:`error_response`, so the
shape follows the API's own schema (per-partition and per-key entries named back where the
client looks for them).
"""

from __future__ import annotations

from typing import Any

from protocol.api import APIS, ApiKey
from protocol.primitives import Obj

__all__ = ["error_response"]

#: the share coordinator's APIs: an entry per share-partition named
_SHARE_STATE = frozenset({ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
                          ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
                          ApiKey.READ_SHARE_GROUP_STATE_SUMMARY})


def error_response(api_key: int, version: int, request: Obj, code: int) -> Obj:
    """A response of the request's API that carries ``code`` everywhere an error can go."""
    api = APIS[api_key]
    body = api.response.default(version)
    _fill_errors(body, code)
    if api_key == ApiKey.PRODUCE:
        body["responses"] = [
            {"name": t.name, "partition_responses": [
                {"index": p.index, "error_code": code, "base_offset": -1} for p in t.partition_data]}
            for t in request.topic_data
        ]
    elif api_key == ApiKey.FETCH:
        body["responses"] = [
            {"topic": t.get("topic", ""), "topic_id": t.get("topic_id"), "partitions": [
                {"partition_index": p.partition, "error_code": code, "high_watermark": -1, "records": b""}
                for p in t.partitions]}
            for t in request.topics
        ]
        body["error_code"] = 0
    elif api_key == ApiKey.FIND_COORDINATOR:  # no coordinator: Kafka's "no node" (-1, "", -1)
        if version >= 4:
            body["coordinators"] = [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code}
                                    for k in request.coordinator_keys]
        else:
            body.update(node_id=-1, host="", port=-1)
    elif api_key in _SHARE_STATE:
        body["results"] = [{"topic_id": t.topic_id, "partitions": [
            {"partition": p.partition, "error_code": code} for p in t.partitions]} for t in request.topics]
    elif api_key == ApiKey.OFFSET_COMMIT or api_key == ApiKey.LIST_OFFSETS:
        body["topics"] = [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": code} for p in t.partitions]} for t in request.topics]
    return body


def _fill_errors(node: Any, code: int) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "error_code":
                node[key] = code
            else:
                _fill_errors(value, code)
    elif isinstance(node, list):
        for item in node:
            _fill_errors(item, code)
