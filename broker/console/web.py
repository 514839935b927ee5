"""The console's HTTP side: :class:`Console` serves the pages on ``console.listener`` in the broker's own
event loop (aiohttp; every handler is async and waits only on Kafka requests, password checks off the
loop, or record reads off the loop).

Every page has a bookmarkable URL that renders it whole on the server: ``/``, ``/topics``,
``/topics/NAME``, ``/groups``, ``/groups/NAME``, ``/brokers``, ``/security`` (names URL-encoded).  The
page script refreshes the page's ``data-live`` parts in place every ``console.refresh.ms`` while the
tab is visible.  Actions are POSTed forms carrying the session's CSRF token (and a same-origin check);
each answers with a redirect to the page and a one-time message.  When the broker's listeners require
SASL, every page but ``/login`` needs a login with the broker's users; the console then acts as that
principal.  Responses forbid framing, inline scripts and caching of pages.
"""

from __future__ import annotations

import asyncio
import calendar
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web

from broker.console.data import ActionError, ConsoleData, RecordQuery
from broker.console.sessions import ConsoleSession, SessionStore
from broker.console.sources import ConsoleSettings, ConsoleSources
from broker.console.views import FORMATS, body, chart, human_bytes, human_rate, page_of, when
from broker.security.acl import user_principal

__all__ = ["Console"]

log = logging.getLogger("kbroker.console")

_HERE = Path(__file__).parent
#: the session cookie's name, with the console's port (cookies are kept per host, not per port: the consoles
#: of several brokers on one host keep their sessions apart)
COOKIE = "kbroker_console_{port}"
#: sent by the page script with the requests that refresh an open page
REFRESH_HEADER = "X-Console-Refresh"
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_OPEN_PATHS = ("/login", "/static/")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: what the guard puts on a request: the session, a POST's form, and the session a login or logout began
SESSION = web.RequestKey("session", ConsoleSession)
FORM = web.RequestKey("form", Any)
NEW_SESSION = web.RequestKey("new_session", ConsoleSession)


def _int(value: str | None, default: int | None = None) -> int | None:
    if value is None or not value.strip():
        return default
    try:
        return int(value.strip())
    except ValueError:
        return None


def parse_time(text: str) -> int | None:
    """A timestamp typed by a person: milliseconds since 1970, or an ISO date and time (UTC unless it says)."""
    text = text.strip()
    if not text:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return calendar.timegm(moment.utctimetuple()) * 1000 + moment.microsecond // 1000


class Console:
    def __init__(self, sources: ConsoleSources, settings: ConsoleSettings) -> None:
        self.sources = sources
        self.settings = settings
        self.data = ConsoleData(sources, settings)
        self.sessions = SessionStore(time.monotonic, timeout_s=settings.session_timeout_ms / 1000,
                                     max_sessions=settings.max_sessions)
        self.templates = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
                                            autoescape=True, undefined=jinja2.StrictUndefined, auto_reload=False)
        self.templates.filters.update(
            url=lambda name: quote(str(name), safe=""), size=human_bytes, rate=human_rate, when=when,
            count=lambda n: "—" if n is None else f"{n:,}")
        self._runner: web.AppRunner | None = None
        #: (host, port) the console listens on, once started
        self.bound: tuple[str, int] | None = None

    @property
    def url(self) -> str:
        assert self.bound is not None
        host, port = self.bound
        host = "127.0.0.1" if host in ("", "0.0.0.0") else host
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    # -- lifecycle ------------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        r = app.router
        r.add_get("/", self.overview)
        r.add_get("/topics", self.topics)
        r.add_post("/topics", self.create_topic)
        r.add_get("/topics/{name}", self.topic)
        r.add_post("/topics/{name}/partitions", self.add_partitions)
        r.add_post("/topics/{name}/configs", self.alter_config)
        r.add_post("/topics/{name}/delete-records", self.delete_records)
        r.add_post("/topics/{name}/delete", self.delete_topic)
        r.add_get("/groups", self.groups)
        r.add_get("/groups/{name:.+}", self.group)
        r.add_post("/groups/{name:.+}", self.group_action)
        r.add_get("/brokers", self.brokers)
        r.add_get("/security", self.security)
        r.add_get("/login", self.login_page)
        r.add_post("/login", self.login)
        r.add_post("/logout", self.logout)
        r.add_static("/static/", str(_HERE / "static"), append_version=True)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.host, self.settings.port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            self._runner = None
            raise
        addresses = self._runner.addresses
        self.bound = tuple(addresses[0][:2]) if addresses else (self.settings.host, self.settings.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- sessions, login, CSRF, headers -------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        cookie = COOKIE.format(port=self.bound[1] if self.bound else self.settings.port)
        session = self.sessions.get(request.cookies.get(cookie))
        if session is not None and session.principal is not None and not self.sources.user_exists(session.principal):
            self.sessions.end_principal(session.principal)  # the user was deleted: its logins end with it
            session = None
        fresh = session is None
        if session is None:
            session = self.sessions.new()
        request[SESSION] = session
        path = request.path
        if request.method == "POST":
            if not self._same_origin(request):
                return self._refused("the form did not come from this console")
            form = await request.post()
            request[FORM] = form
            token = form.get("csrf")
            if not session.csrf_ok(token if isinstance(token, str) else None):
                return self._refused("the form has expired or did not come from this console: reload the page")
        if (self.settings.login_required and session.principal is None
                and not path.startswith(_OPEN_PATHS) and request.method == "GET"):
            response: web.StreamResponse = web.HTTPSeeOther("/login?next=" + quote(request.path_qs, safe=""))
        elif self.settings.login_required and session.principal is None and not path.startswith(_OPEN_PATHS):
            response = self._refused("log in first")
        else:
            try:
                response = await handler(request)
            except web.HTTPException as exc:
                response = exc
        if fresh or request.get(NEW_SESSION) is not None:
            current: ConsoleSession = request.get(NEW_SESSION) or session
            response.set_cookie(cookie, current.id, httponly=True, samesite="Strict", path="/")
        headers = response.headers
        headers["Content-Security-Policy"] = _CSP
        headers["X-Content-Type-Options"] = "nosniff"
        headers["X-Frame-Options"] = "DENY"
        headers["Referrer-Policy"] = "same-origin"
        if not path.startswith("/static/"):
            headers["Cache-Control"] = "no-store"
        return response

    @staticmethod
    def _same_origin(request: web.Request) -> bool:
        """A POST's Origin (or Referer) names this console's own host, when the browser sends one."""
        origin = request.headers.get("Origin") or request.headers.get("Referer")
        if not origin or origin == "null":
            return origin != "null"
        return urlsplit(origin).netloc == request.host

    def _refused(self, why: str) -> web.Response:
        return web.Response(status=403, text=self.templates.get_template("refused.html").render(
            why=why, refresh_ms=0, session=None, csrf="", login_required=self.settings.login_required, nav="",
            flashes=[], title="Refused"), content_type="text/html")

    def _render(self, request: web.Request, template: str, nav: str, title: str, **context: Any) -> web.Response:
        session: ConsoleSession = request[SESSION]
        flashes: list[tuple[str, str]] = []
        if REFRESH_HEADER not in request.headers:  # a page's own refresh leaves the messages for the next page
            flashes, session.flashes = session.flashes, []
        html = self.templates.get_template(template).render(
            session=session, csrf=session.csrf, refresh_ms=self.settings.refresh_ms, nav=nav, title=title,
            login_required=self.settings.login_required, flashes=flashes, node_id=self.sources.node_id, **context)
        return web.Response(text=html, content_type="text/html")

    @staticmethod
    def _authz(request: web.Request) -> Any:
        return request[SESSION].authz

    @staticmethod
    def _back(request: web.Request, location: str, kind: str, message: str) -> web.HTTPSeeOther:
        request[SESSION].flashes.append((kind, message))
        return web.HTTPSeeOther(location)

    async def login_page(self, request: web.Request) -> web.Response:
        return self._render(request, "login.html", "login", "Log in", next=request.query.get("next", "/"),
                            error="")

    async def login(self, request: web.Request) -> web.StreamResponse:
        form = request[FORM]
        user, password = str(form.get("username", "")), str(form.get("password", ""))
        target = str(form.get("next", "/"))
        if not target.startswith("/") or target.startswith(("//", "/\\")):  # never another site
            target = "/"
        if not self.settings.login_required:
            return web.HTTPSeeOther(target)
        if user and password and await self.sources.check_password(user, password):
            principal = user_principal(user)
            self.sessions.end(request[SESSION].id)
            session = self.sessions.new(principal, self.sources.new_session(principal, request.remote or ""))
            request[NEW_SESSION] = session
            log.info("console: %s logged in from %s", principal, request.remote)
            return web.HTTPSeeOther(target)
        await asyncio.sleep(self.settings.failed_login_delay_ms / 1000)
        log.info("console: failed login for %r from %s", user, request.remote)
        response = self._render(request, "login.html", "login", "Log in", next=target,
                                error="The user name or password is not right.")
        response.set_status(401)
        return response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        self.sessions.end(request[SESSION].id)
        request[NEW_SESSION] = self.sessions.new()
        return web.HTTPSeeOther("/login" if self.settings.login_required else "/")

    # -- pages -------------------------------------------------------------------------------------------------
    def _charts(self) -> list[Any]:
        h = self.sources.history
        return [
            chart("Record bytes in and out", [("in", h.rate("bytes_in")), ("out", h.rate("bytes_out"))],
                  lambda v: human_bytes(v) + "/s"),
            chart("Records produced", [("records", h.rate("records_in"))], lambda v: human_rate(v, "rec/s")),
            chart("Requests", [("all", h.rate("requests")), ("produce", h.rate("produce_requests")),
                               ("fetch", h.rate("fetch_requests"))], lambda v: human_rate(v, "req/s")),
        ]

    async def overview(self, request: web.Request) -> web.Response:
        cluster = self.data.cluster()
        return self._render(request, "overview.html", "overview", "Overview", cluster=cluster,
                            charts=self._charts(), problems=self.data.under_replicated(20))

    async def brokers(self, request: web.Request) -> web.Response:
        return self._render(request, "brokers.html", "brokers", "Brokers", cluster=self.data.cluster(),
                            problems=self.data.under_replicated(self.settings.page_size))

    async def topics(self, request: web.Request) -> web.Response:
        authz = self._authz(request)
        text = request.query.get("q", "")
        internal = request.query.get("internal") == "1"
        topics = self.data.topics(authz, internal=internal, text=text)
        rows, page = page_of(topics, request.query.get("page"), self.settings.page_size)
        sizes = await self.data.topic_sizes(authz, rows)
        alive = set(self.data.image.brokers)
        shown = [{"name": t.name, "partitions": t.partition_count,
                  "rf": len(t.partitions[0].replicas) if 0 in t.partitions else 0,
                  "size": sizes.get(t.name), "rate": self.sources.history.topic_rates.get(t.name),
                  "under": sum(1 for p in t.partitions.values()
                               if len(p.isr) < len(p.replicas) or p.leader not in alive)} for t in rows]
        return self._render(request, "topics.html", "topics", "Topics", topics=shown, page=page, q=text,
                            internal=internal)

    async def topic(self, request: web.Request) -> web.Response:
        authz = self._authz(request)
        name = request.match_info["name"]
        topic = self.data.topic(authz, name)
        if topic is None:
            response = self._render(request, "missing.html", "topics", "No such topic", what="topic", name=name)
            response.set_status(404)
            return response
        parts, page = page_of(sorted(topic.partitions.values(), key=lambda p: p.partition),
                              request.query.get("page"), self.settings.page_size)
        facts = await self.data.facts(authz, name, [p.partition for p in parts])
        alive = set(self.data.image.brokers)
        partitions = [{"id": p.partition, "leader": p.leader, "leader_alive": p.leader in alive,
                       "replicas": p.replicas, "isr": p.isr, "start": facts[p.partition].start,
                       "end": facts[p.partition].end, "size": facts[p.partition].size,
                       "under": len(p.isr) < len(p.replicas) or p.leader not in alive,
                       "reassigning": p.record.reassigning} for p in parts]
        configs, configs_error = await self.data.topic_configs(authz, name)
        q = request.query
        fmt = q.get("format", "text") if q.get("format") in FORMATS else "text"
        browse: dict[str, Any] = {"asked": "mode" in q, "records": [], "notes": [], "error": "",
                                  "partition": q.get("partition", "all"), "mode": q.get("mode", "newest"),
                                  "count": q.get("count", "20"), "offset": q.get("offset", ""),
                                  "timestamp": q.get("timestamp", ""), "search": q.get("search", ""), "format": fmt}
        if browse["asked"]:
            await self._browse(authz, name, browse)
        return self._render(request, "topic.html", "topics", f"Topic {name}", topic=topic, name=name,
                            partitions=partitions, page=page, configs=configs, configs_error=configs_error,
                            browse=browse, formats=FORMATS, records_max=self.settings.records_max)

    async def _browse(self, authz: Any, topic: str, browse: dict[str, Any]) -> None:
        partition = None if browse["partition"] in ("", "all") else _int(browse["partition"], -1)
        count = _int(browse["count"], 20)
        mode = browse["mode"] if browse["mode"] in ("newest", "offset", "timestamp") else "newest"
        if (partition is None and browse["partition"] not in ("", "all")) or (partition is not None and partition < 0):
            browse["error"] = f"the partition must be a number or all, not {browse['partition']!r}"
            return
        if count is None or count < 1:
            browse["error"] = f"the number of records must be a whole number of 1 or more, not {browse['count']!r}"
            return
        offset = _int(browse["offset"]) if mode == "offset" else None
        if mode == "offset" and offset is None:
            browse["error"] = f"the offset must be a whole number, not {browse['offset']!r}"
            return
        stamp = parse_time(browse["timestamp"]) if mode == "timestamp" else None
        if mode == "timestamp" and stamp is None:
            browse["error"] = (f"the timestamp must be milliseconds since 1970 or a date and time such as "
                               f"2024-05-01T12:00:00Z, not {browse['timestamp']!r}")
            return
        if count > self.settings.records_max:
            browse["notes"].append(f"at most {self.settings.records_max} records are read at once")
        try:
            result = await self.data.browse(authz, topic, RecordQuery(partition, mode, count, offset, stamp))
        except ActionError as exc:
            browse["error"] = str(exc)
            return
        browse["notes"].extend(result.notes)
        limit, fmt, needle = self.settings.record_view_bytes, browse["format"], browse["search"].lower()
        rows = []
        for br in result.records:
            r = br.record
            if needle and not _contains(r, needle):
                continue
            rows.append({"partition": br.partition, "offset": r.offset, "timestamp": r.timestamp,
                         "timestamp_type": "LogAppendTime" if r.timestamp_type else "CreateTime",
                         "key": body(r.key, fmt, limit), "value": body(r.value, fmt, limit),
                         "headers": [(k, body(v, "text" if fmt == "json" else fmt, limit)) for k, v in r.headers]})
        browse["records"] = rows
        browse["fetched"] = len(result.records)

    async def groups(self, request: web.Request) -> web.Response:
        authz = self._authz(request)
        text = request.query.get("q", "")
        groups, notes = await self.data.groups(authz, text)
        rows, page = page_of(groups, request.query.get("page"), self.settings.page_size)
        offsets = await self.data.group_offsets(authz, [g["id"] for g in rows if g["type"] != "share"])
        offsets.update(await self.data.share_group_offsets(authz, [g["id"] for g in rows if g["type"] == "share"]))
        for g in rows:
            got = offsets.get(g["id"])
            g["lag"] = None if not isinstance(got, list) or any(r["lag"] is None for r in got) else \
                sum(r["lag"] for r in got)
            g["partitions"] = len(got) if isinstance(got, list) else None
        return self._render(request, "groups.html", "groups", "Consumer groups", groups=rows, page=page, q=text,
                            notes=notes)

    async def group(self, request: web.Request) -> web.Response:
        authz = self._authz(request)
        name = request.match_info["name"]
        try:
            group = await self.data.describe_group(authz, name)
        except ActionError as exc:
            response = self._render(request, "missing.html", "groups", "No such group", what="group", name=name,
                                    why=str(exc))
            response.set_status(404)
            return response
        share = group["type"] == "share"
        offsets = (await (self.data.share_group_offsets if share else self.data.group_offsets)(authz, [name])).get(name)
        offsets_error = offsets if isinstance(offsets, str) else ""
        rows, page = page_of(offsets if isinstance(offsets, list) else [], request.query.get("page"),
                             self.settings.page_size)
        total = None if not isinstance(offsets, list) or any(r["lag"] is None for r in offsets) else \
            sum(r["lag"] for r in offsets)
        # a consumer group's lag history is kept by its coordinator; a share group's by the share coordinators
        # of its partitions (each broker charts those it coordinates, all of them on a single node)
        lag_chart = chart("Total lag" if not share else "Lag of the share-partitions whose state this broker keeps",
                          [("lag", self.sources.history.gauge("lag:" + name))], lambda v: f"{v:,.0f}")
        local_history = group["coordinator"] == self.sources.node_id  # (consumer groups)
        return self._render(request, "group.html", "groups", f"Group {name}", group=group, name=name, offsets=rows,
                            page=page, offsets_error=offsets_error, total_lag=total, lag_chart=lag_chart,
                            local_history=local_history)

    async def security(self, request: web.Request) -> web.Response:
        authz = self._authz(request)
        users, users_error = await self.data.users(authz)
        acls, acls_error = await self.data.acls(authz) if self.sources.authorizer_enabled else ([], "")
        return self._render(request, "security.html", "security", "Security", users=users, users_error=users_error,
                            acls=acls, acls_error=acls_error, authorizer=self.sources.authorizer_enabled,
                            listeners=self.sources.listeners)

    # -- actions -------------------------------------------------------------------------------------------------
    async def create_topic(self, request: web.Request) -> web.StreamResponse:
        form = request[FORM]
        name = str(form.get("name", "")).strip()
        partitions = _int(str(form.get("partitions", "")), 1)
        rf = _int(str(form.get("replication_factor", "")), -1)
        if not name:
            raise self._back(request, "/topics", "error", "give the new topic a name")
        if partitions is None or partitions < 1 or rf is None or (rf < 1 and rf != -1):
            raise self._back(request, "/topics", "error", "partitions and replication factor must be whole numbers of "
                             "1 or more")
        configs = {}
        for line in str(form.get("configs", "")).splitlines():
            if line.strip():
                key, sep, value = line.partition("=")
                if not sep:
                    raise self._back(request, "/topics", "error", f"configs are NAME=VALUE lines, not {line!r}")
                configs[key.strip()] = value.strip()
        try:
            await self.data.create_topic(self._authz(request), name, partitions, rf, configs)
        except ActionError as exc:
            raise self._back(request, "/topics", "error", f"topic {name} was not created: {exc}") from None
        raise self._back(request, "/topics/" + quote(name, safe=""), "ok", f"topic {name} created")

    async def add_partitions(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        count = _int(str(request[FORM].get("count", "")))
        here = "/topics/" + quote(name, safe="")
        if count is None or count < 1:
            raise self._back(request, here, "error", "the new partition count must be a whole number")
        try:
            await self.data.add_partitions(self._authz(request), name, count)
        except ActionError as exc:
            raise self._back(request, here, "error", f"partitions not added: {exc}") from None
        raise self._back(request, here, "ok", f"{name} now has {count} partitions")

    async def alter_config(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        form = request[FORM]
        key = str(form.get("config", "")).strip()
        value = str(form.get("value", ""))
        remove = form.get("remove") == "1"
        here = "/topics/" + quote(name, safe="") + "#configs"
        if not key:
            raise self._back(request, here, "error", "name the config to change")
        try:
            await self.data.alter_config(self._authz(request), name, key, None if remove else value)
        except ActionError as exc:
            raise self._back(request, here, "error", f"{key} not changed: {exc}") from None
        raise self._back(request, here, "ok", f"{key} {'reset to its default' if remove else 'set to ' + value}")

    async def delete_records(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        form = request[FORM]
        partition = _int(str(form.get("partition", "")))
        offset = _int(str(form.get("offset", "")))
        here = "/topics/" + quote(name, safe="")
        if partition is None or partition < 0 or offset is None or offset < -1:
            raise self._back(request, here, "error", "give a partition and an offset (-1: everything)")
        try:
            start = await self.data.delete_records(self._authz(request), name, partition, offset)
        except ActionError as exc:
            raise self._back(request, here, "error", f"records not deleted: {exc}") from None
        raise self._back(request, here, "ok", f"partition {partition} now starts at offset {start}")

    async def delete_topic(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        here = "/topics/" + quote(name, safe="")
        if str(request[FORM].get("confirm", "")) != name:
            raise self._back(request, here, "error", "type the topic's name to confirm its deletion")
        try:
            await self.data.delete_topic(self._authz(request), name)
        except ActionError as exc:
            raise self._back(request, here, "error", f"{name} not deleted: {exc}") from None
        raise self._back(request, "/topics", "ok", f"topic {name} deleted")

    async def group_action(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        form = request[FORM]
        here = "/groups/" + quote(name, safe="")
        action = form.get("action")
        authz = self._authz(request)
        if action == "delete":
            if str(form.get("confirm", "")) != name:
                raise self._back(request, here, "error", "type the group's name to confirm its deletion")
            try:
                await self.data.delete_group(authz, name)
            except ActionError as exc:
                raise self._back(request, here, "error", f"group not deleted: {exc}") from None
            raise self._back(request, "/groups", "ok", f"group {name} deleted")
        if action == "reset":
            strategy = str(form.get("strategy", ""))
            raw = str(form.get("value", ""))
            value = parse_time(raw) if strategy == "timestamp" else _int(raw)
            if strategy in ("timestamp", "offset") and value is None:
                raise self._back(request, here, "error", f"{raw!r} is not a {strategy}")
            try:
                n = await self.data.reset_offsets(authz, name, strategy, value, str(form.get("topic", "")).strip())
            except ActionError as exc:
                raise self._back(request, here, "error", f"offsets not reset: {exc}") from None
            raise self._back(request, here, "ok", f"offsets of {n} partition(s) reset to {strategy}")
        raise self._back(request, here, "error", "unknown action")


def _contains(record: Any, needle: str) -> bool:
    """Whether the record's key, value or a header holds ``needle`` (as text, case-insensitive)."""
    for data in (record.key, record.value, *(v for _, v in record.headers)):
        if data is not None and needle in bytes(data).decode("utf-8", errors="replace").lower():
            return True
    return any(needle in k.lower() for k, _ in record.headers)
