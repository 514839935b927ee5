"""ApiVersions (18): the APIs and versions this broker serves (KIP-511: a version it cannot
parse is answered by the dispatcher with v0), and (v3+) the features it supports and has finalised:
``share.version`` level 1 (share groups on, as in a freshly formatted Kafka 4.2 cluster)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from broker.handlers.registry import Reply, api_versions_entries, handles
from protocol.api import ApiKey
from protocol.error_codes import ErrorCode
from protocol.primitives import Obj

if TYPE_CHECKING:
    from broker.handlers.context import RequestContext
    from broker.handlers.services import Services

#: feature -> (lowest, highest) level supported; every one is finalised at its highest
FEATURES = {"share.version": (0, 1)}
_SUPPORTED = [{"name": n, "min_version": lo, "max_version": hi} for n, (lo, hi) in FEATURES.items()]
_FINALIZED = [{"name": n, "max_version_level": hi, "min_version_level": hi} for n, (_, hi) in FEATURES.items()]
_CLIENT_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


@handles(ApiKey.API_VERSIONS, versions=(0, 4))
def api_versions(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    entries = api_versions_entries()
    if ctx.version >= 3 and not (_CLIENT_SOFTWARE.match(req.client_software_name or "")
                                 and _CLIENT_SOFTWARE.match(req.client_software_version or "")):
        return Obj(error_code=ErrorCode.INVALID_REQUEST, api_keys=entries)
    return Obj(error_code=0, api_keys=entries, throttle_time_ms=0, supported_features=_SUPPORTED,
               finalized_features_epoch=1, finalized_features=_FINALIZED)
