"""ApiVersions (18): the APIs and versions this broker serves (KIP-511: a version it cannot
parse is answered by the dispatcher with v0)."""

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

_CLIENT_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


@handles(ApiKey.API_VERSIONS, versions=(0, 4))
def api_versions(s: Services, ctx: RequestContext, req: Obj) -> Reply:
    entries = api_versions_entries()
    if ctx.version >= 3 and not (_CLIENT_SOFTWARE.match(req.client_software_name or "")
                                 and _CLIENT_SOFTWARE.match(req.client_software_version or "")):
        return Obj(error_code=ErrorCode.INVALID_REQUEST, api_keys=entries)
    return Obj(error_code=0, api_keys=entries, throttle_time_ms=0)
