"""DescribeLogDirs (35): the one data directory, its partitions' sizes and (v4) its disk space;
KAFKA_STORAGE_ERROR once it is offline."""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from broker.handlers.registry import Reply, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

E = ErrorCode


@handles(ApiKey.DESCRIBE_LOG_DIRS, versions=(1, 4))
def describe_log_dirs(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    logs = s.logs
    wanted = None if req.topics is None else {(t.topic, p) for t in req.topics for p in t.partitions}
    topics: dict[str, list[dict[str, Any]]] = {}
    if not logs.offline:
        for (topic, partition), plog in sorted(logs.hosted().items()):
            if wanted is not None and (topic, partition) not in wanted:
                continue
            topics.setdefault(topic, []).append({
                "partition_index": partition, "partition_size": plog.size_bytes,
                "offset_lag": max(0, plog.high_watermark - plog.log_end_offset), "is_future_key": False})
    try:
        usage = shutil.disk_usage(logs.data_dir)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    result = {"error_code": E.KAFKA_STORAGE_ERROR if logs.offline else 0, "log_dir": os.path.abspath(logs.data_dir),
              "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
              "total_bytes": total, "usable_bytes": usable}
    return Obj(throttle_time_ms=0, error_code=0, results=[result])
