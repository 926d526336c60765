"""The REST API (FastAPI) over the one query layer: what the dashboard, the CLI and any script read.

Every request first passes the gate (:mod:`ui.api.guard`: the route's rule, the token and its
role, the size of the query and of the body) before anything reads its body. Every read endpoint
then hands its parameters, as sent, to :class:`ui.query.layer.Query`, which validates them before
any SQL exists; its :class:`~pipeline.errors.QueryError` becomes a 400 with ``{"error": "..."}``,
a request FastAPI cannot parse a 422 of the same shape, a store failure a 503. Commands people
enter are published on the bus by :mod:`ui.api.commands` (when the app has a publisher), given by
the identity of their token, and answered with 202: remediation applies them and records an audit
action. Each route is declared with what it needs (:func:`create_app`'s ``route``); a route
declared without a need cannot be built.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Request
from fastapi import Query as Param
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from pipeline.errors import BusError, QueryError, StoreError
from pipeline.exposition import Metrics
from pipeline.times import MAX_INSTANT_NS
from ui.api.access import COMMAND_ROLES, AccessSettings, Identity, Refused, Tokens
from ui.api.commands import SERVER_FIELDS, CommandPublisher, CommandRequest, build
from ui.api.guard import MAX_BODY_BYTES, MAX_QUERY_BYTES, Guard, Need
from ui.api.metrics import instrument
from ui.query.layer import Query
from ui.query.views import (
    ActionList,
    AlertList,
    Clock,
    FabricStatus,
    FabricView,
    Health,
    HeatMap,
    IncidentList,
    LatestList,
    SeriesSet,
    TopologyView,
)

Probes = Callable[[], dict[str, dict[str, Any]]]

TIME_HELP = ("an instant: RFC 3339 with a zone (2026-11-30T10:00:00Z; a time without a zone is "
             "refused), relative to the fabric's clock (now, now-15m, now+30s, -15m), "
             "@<Unix seconds>, or a bare integer of ns since the epoch (docs/time.md)")
SPAN_HELP = ("a duration: 90s, 1h30m, 500ms, 2d (units d h m s ms us ns, largest first), or a "
             "bare number of seconds (docs/time.md)")

Text = Annotated[str | None, Param(max_length=200)]
Names = Annotated[list[str] | None, Param(max_length=64,
                                          description="repeat, or separate with commas")]
When = Annotated[str | None, Param(max_length=40, description=TIME_HELP)]


class ErrorBody(BaseModel):
    """Every refusal: what was wrong and what to send instead."""

    error: str


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        400: "the request is invalid: the message says what to send instead",
        401: "no token, or a token the API does not know (Authorization: Bearer <token>)",
        403: "the token's role may not do this",
        413: f"the body is longer than {MAX_BODY_BYTES:,} bytes",
        414: f"the query string is longer than {MAX_QUERY_BYTES:,} bytes",
        422: "a parameter or field has the wrong type, is out of bounds, or is missing",
        503: "the store or the bus is unavailable",
    }
    return {code: {"model": ErrorBody, "description": text[code]} for code in codes}


class ProbeAnswer(BaseModel):
    """``/healthz`` to a request without a token when reads need one: the status alone."""

    status: Literal["ok", "degraded"]


#: what every read may answer besides its data
READ_ERRORS = _errors(400, 401, 414, 422, 503)


@dataclass
class ApiStats:
    """What the API reports about itself in ``/healthz`` and the platform's health."""

    requests: int = 0
    client_errors: int = 0
    server_errors: int = 0
    commands: int = 0
    #: requests the gate refused (no or unknown token, too weak a role, too large)
    refused: int = 0
    slowest_ms: float = 0.0
    by_route_ms: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "client_errors": self.client_errors,
                "server_errors": self.server_errors, "commands": self.commands,
                "refused": self.refused, "slowest_ms": round(self.slowest_ms, 1),
                "last_ms": {k: round(v, 1) for k, v in self.by_route_ms.items()}}

    def refusal(self, status: int) -> None:
        self.requests += 1
        self.client_errors += 1
        self.refused += 1


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message})


def _identity(request: Request) -> Identity | None:
    found: Identity | None = request.scope.get("state", {}).get("identity")
    return found


#: FastAPI's own routes: the API's documentation, open to anyone
DOC_NEEDS: dict[str, Need] = {"/openapi.json": "open", "/docs": "open",
                              "/docs/oauth2-redirect": "open", "/redoc": "open"}


def create_app(query: Query, probes: Probes | None = None,
               publisher: CommandPublisher | None = None,
               stats: ApiStats | None = None, tokens: Tokens | None = None,
               metrics: Metrics | None = None) -> FastAPI:
    """The API over ``query``; ``probes`` reports the platform's loops for ``/healthz``;
    ``publisher`` enables ``POST /v1/commands``; ``tokens`` says who may do what (default: no
    tokens, reads open, so no commands); with ``metrics``, requests are timed and
    ``GET /metrics`` serves the process's registry (:mod:`ui.api.metrics`)."""
    tokens = tokens or Tokens(AccessSettings())
    app = FastAPI(
        title="rocewatch API",
        version="1",
        summary="History and live state of a RoCE fabric: series, alerts, incidents, actions.",
        description=(
            "Times are event time in ns since the epoch. 'now' is the fabric's clock: the newest "
            "sample's event time. Times and durations sent are read in the platform's one "
            "grammar (docs/time.md): instants as RFC 3339 with a zone, now-15m, @<Unix seconds> "
            "or ns; durations as 90s, 1h30m or a bare number of seconds; absurd values are a "
            "400. Counters are served as per-second rates. Send a token as "
            "`Authorization: Bearer <token>`: commands need one (role operator, or admin to "
            "resume automation), reads need one when the API is configured so (role viewer). "
            'Errors are `{"error": "..."}` with 400 (a bad request, the message says what to '
            "send), 401 (no token or an unknown one), 403 (the token's role may not), 413 (a "
            "body over 1 MiB), 414 (a query string over 16 KiB), 422 (a parameter of the wrong "
            "type or out of bounds) or 503 (the store or bus is unavailable)."),
    )
    api_stats = stats or ApiStats()
    app.state.stats = api_stats
    needs: dict[str, dict[str, Need]] = {path: {"GET": need, "HEAD": need}
                                         for path, need in DOC_NEEDS.items()}

    def route(method: str, path: str, need: Need, **kw: Any) -> Callable[[Any], Any]:
        """Declare a route with what it needs (the gate enforces it)."""
        needs.setdefault(path, {})[method] = need
        if need == "read":
            kw["responses"] = {**READ_ERRORS, **kw.get("responses", {})}
        if need != "open":
            # a probe answers without a token too (OpenAPI: the empty requirement)
            optional: list[dict[str, list[str]]] = [{}] if need == "probe" else []
            kw.setdefault("openapi_extra", {})["security"] = [{"bearer": []}, *optional]
        return app.api_route(path, methods=[method], **kw)

    @app.middleware("http")
    async def count(request: Request, call_next: Callable[[Request], Any]) -> Any:
        t0 = time.perf_counter()
        response = await call_next(request)
        ms = (time.perf_counter() - t0) * 1000
        api_stats.requests += 1
        if 400 <= response.status_code < 500:
            api_stats.client_errors += 1
        elif response.status_code >= 500:
            api_stats.server_errors += 1
        api_stats.slowest_ms = max(api_stats.slowest_ms, ms)
        matched = request.scope.get("route")
        if matched is not None:
            api_stats.by_route_ms[getattr(matched, "path", "?")] = ms
        return response

    @app.exception_handler(QueryError)
    async def bad_query(_: Request, exc: QueryError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(StoreError)
    async def store_down(_: Request, exc: StoreError) -> JSONResponse:
        return _error(503, f"the store failed: {exc}")

    @app.exception_handler(BusError)
    async def bus_down(_: Request, exc: BusError) -> JSONResponse:
        return _error(503, f"the bus failed: {exc}")

    @app.exception_handler(RequestValidationError)
    async def unparsable(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors()[:5]:
            loc = [str(x) for x in err.get("loc", ()) if x not in ("query", "body")]
            if len(loc) > 1 and loc[0] in COMMAND_ROLES:
                loc = loc[1:]  # the command's kind: the message is about its field
            msg = err.get("msg", "invalid")
            if err.get("type") == "extra_forbidden" and loc and loc[-1] in SERVER_FIELDS:
                msg = ("not taken: the API sets it (the actor is the identity of your token)"
                       if loc[-1] == "by" else "not taken: the API sets it")
            elif loc and loc[-1].endswith("_ns"):
                msg += f" (want an integer of ns since the epoch, below {MAX_INSTANT_NS}: 2100)"
            problems.append(f"{'.'.join(loc) or 'request'}: {msg}")
        return _error(422, "; ".join(problems))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @route("GET", "/healthz", "probe", response_model=Health | ProbeAnswer, tags=["platform"],
           responses={503: {"model": Health | ProbeAnswer,
                            "description": "degraded: the store or a loop is down"},
                      **_errors(401)})
    def healthz(request: Request) -> JSONResponse:
        """The store's reachability, the fabric clock, and every platform loop's health; when
        reads need a token, a request without one hears only the `status` (a probe's answer)."""
        loops = probes() if probes else {}
        loops = {**loops, "api": {**loops.get("api", {}), **api_stats.as_dict(),
                                  "tokens": tokens.count, "tokens_error": tokens.error}}
        health = query.health(loops)
        code = 200 if health.status == "ok" else 503
        if tokens.read_needs_token and _identity(request) is None:
            return JSONResponse(status_code=code, content={"status": health.status})
        return JSONResponse(status_code=code, content=health.model_dump(mode="json"))

    @route("GET", "/v1/identity", "viewer", response_model=Identity, tags=["platform"],
           responses=_errors(401))
    def identity(request: Request) -> Identity:
        """Who the request's token stands for, its role, and what it may do (`read` and the
        command kinds): a client checks a token here once, then sends it with every request."""
        found = _identity(request)
        assert found is not None  # the gate let only a known token through
        return found

    @route("GET", "/v1/clock", "read", response_model=Clock, tags=["fabric"])
    def clock() -> Clock:
        """The fabric's clock: what 'now' means for relative times."""
        return query.clock.now()

    @route("GET", "/v1/series", "read", response_model=SeriesSet, tags=["telemetry"])
    def series(
        device: Annotated[str, Param(max_length=64, description="switch name, like leaf3")],
        port: Annotated[str, Param(max_length=64, description="port name, like Ethernet5")],
        metric: Annotated[list[str], Param(max_length=16, description=(
            "catalog metric names; repeat or separate with commas (at most 16)"))],
        qual: Annotated[int | None, Param(description="PFC priority 0-7 or queue index")] = None,
        start: When = None,
        end: When = None,
        step: Annotated[str | None, Param(max_length=20, description=(
            "bucket width, " + SPAN_HELP + " (default: about 360 points)"))] = None,
        agg: Annotated[str | None, Param(max_length=10, description=(
            "gauges: mean (default), max, min, last; counters are always rates"))] = None,
        source: Annotated[str | None, Param(max_length=10, description=(
            "auto (default), raw, 1m, 1h: raw samples or a rollup"))] = None,
    ) -> SeriesSet:
        """One port's metrics over a range, bucketed: counters as per-second rates (reset- and
        wrap-aware), gauges aggregated per bucket. Empty buckets are null (no data)."""
        return query.series(device, port, metric, qual=qual, start=start, end=end, step=step,
                            agg=agg, source=source)

    @route("GET", "/v1/latest", "read", response_model=LatestList, tags=["telemetry"])
    def latest(
        device: Annotated[str, Param(max_length=64)],
        port: Text = None,
        metric: Names = None,
        window: Annotated[str | None, Param(max_length=20, description=(
            "how far back counter rates look, " + SPAN_HELP + " (default 30s)"))] = None,
    ) -> LatestList:
        """Every metric of a switch (or one port): last gauge values, recent counter rates."""
        return query.latest(device, port, metric, window)

    @route("GET", "/v1/alerts", "read", response_model=AlertList, tags=["alerts"])
    def alerts(
        at: When = None,
        start: When = None,
        end: When = None,
        name: Names = None,
        entity: Names = None,
        severity: Names = None,
        kind: Annotated[str | None, Param(max_length=10, description=(
            "incident (root causes) or symptom"))] = None,
        fingerprint: Text = None,
        touching: Annotated[str | None, Param(max_length=64, description=(
            "a switch or host: alerts whose entity or ports involve it"))] = None,
        limit: Annotated[int | None, Param(ge=1, le=100_000)] = None,
    ) -> AlertList:
        """Alerts firing now (no times), firing at `at`, or active at some time in
        `[start, end]` (episodes, with their state as of `end`)."""
        if kind not in (None, "", "incident", "symptom"):
            raise QueryError(f"kind: {kind!r} is not one of incident, symptom")
        root = None if not kind else kind == "incident"
        return query.alerts(at=at, start=start, end=end, name=name, entity=entity,
                            severity=severity, root_cause=root, fingerprint=fingerprint,
                            touching=touching, limit=limit)

    @route("GET", "/v1/incidents", "read", response_model=IncidentList, tags=["alerts"])
    def incidents(
        at: When = None,
        start: When = None,
        end: When = None,
        name: Names = None,
        entity: Names = None,
        severity: Names = None,
        touching: Annotated[str | None, Param(max_length=64)] = None,
        limit: Annotated[int | None, Param(ge=1, le=100_000)] = None,
    ) -> IncidentList:
        """Root-cause incidents, each with the symptoms it explains, and the symptoms no
        incident explains."""
        return query.incidents(at=at, start=start, end=end, name=name, entity=entity,
                               severity=severity, touching=touching, limit=limit)

    @route("GET", "/v1/actions", "read", response_model=ActionList, tags=["actions"])
    def actions(
        start: When = None,
        end: When = None,
        action: Names = None,
        target: Names = None,
        outcome: Names = None,
        mode: Names = None,
        alert_fingerprint: Text = None,
        limit: Annotated[int | None, Param(ge=1, le=100_000)] = None,
    ) -> ActionList:
        """The audit trail (notifications, drains, TE notices, commands), newest first; the
        default range is the last 24 hours."""
        return query.actions(start=start, end=end, action=action, target=target,
                             outcome=outcome, mode=mode, alert_fingerprint=alert_fingerprint,
                             limit=limit)

    @route("GET", "/v1/status", "read", response_model=FabricStatus, tags=["fabric"])
    def status(
        top: Annotated[int, Param(ge=0, le=1000, description="busiest links to list")] = 20,
    ) -> FabricStatus:
        """Every link, host and switch that is not ok (worst first, with the alert that makes it
        so), how many are at each level, the busiest links, and whether telemetry is live."""
        return query.status(top)

    @route("GET", "/v1/topology", "read", response_model=TopologyView, tags=["fabric"])
    def topology() -> TopologyView:
        """The fabric's switches, links and hosts (when known) and the devices seen."""
        return query.topology_view()

    @route("GET", "/v1/fabric", "read", response_model=FabricView, tags=["fabric"])
    def fabric(
        group: Annotated[str | None, Param(max_length=32, description=(
            "a zone (z3), the aggregation tier (agg) or fabric (two tiers): its switches"))] = None,
        switch: Annotated[str | None, Param(max_length=64, description=(
            "a switch: its ports, and its group's switches"))] = None,
        incident: Annotated[str | None, Param(max_length=32, description=(
            "a firing incident's fingerprint: its pause tree"))] = None,
    ) -> FabricView:
        """The fabric in its hierarchy: zones and the aggregation tier, worst first, with health
        rolled up from links, hosts and ports; a group's switches or a switch's ports; an
        incident's pause tree."""
        return query.fabric(group, switch, incident)

    @route("GET", "/v1/heatmap", "read", response_model=HeatMap, tags=["fabric"])
    def heatmap(
        scope: Annotated[str | None, Param(max_length=64, description=(
            "a group (z3, agg) or a switch; default: the whole fabric"))] = None,
        sort: Annotated[str | None, Param(max_length=16, description=(
            "the column to rank by: util, pfc_rx, pfc_tx, paused, ecn, errors"))] = None,
        search: Annotated[str | None, Param(max_length=64, description=(
            "ports whose name, link or host, or far end contains this"))] = None,
        top: Annotated[int, Param(ge=1, le=500, description="rows to return")] = 50,
    ) -> HeatMap:
        """The ports that matter: every connected port's utilisation, PFC pauses each way, time
        paused, ECN marks and errors, ranked by one of them."""
        return query.heatmap(scope, sort, search, top)

    if publisher is not None:
        commands = publisher

        @route("POST", "/v1/commands", "operator", status_code=202, tags=["commands"],
               responses=_errors(400, 401, 403, 413, 422, 503))
        def command(body: Annotated[CommandRequest, Body()], request: Request) -> Any:
            """Approve or reject a runbook awaiting approval, record a repair, add or expire a
            silence (role operator), or resume automation (role admin). The actor recorded is
            the identity of the request's token (`by` is not taken). Accepted commands are
            applied by remediation, which records the outcome as an action
            (`GET /v1/actions?action=command`)."""
            kind = str(getattr(body, "kind", ""))
            try:
                who = tokens.require(_identity(request), COMMAND_ROLES.get(kind, "admin"),
                                     f"a {kind} command")
            except Refused as exc:
                return _error(exc.status, str(exc))
            sent = commands.publish(build(body, who.name))
            api_stats.commands += 1
            return {"accepted": True, "id": sent.id, "kind": sent.kind, "by": sent.by,
                    "topic": commands.topic}

    if metrics is not None:
        instrument(app, route, metrics)
    missing = [f"{sorted(getattr(r, 'methods', ()) or ())} {getattr(r, 'path', r)}"
               for r in app.routes
               if not set(getattr(r, "methods", ()) or ())
               <= set(needs.get(getattr(r, "path", ""), {}))]
    if missing:
        raise RuntimeError(f"routes without a rule of who may use them: {missing}")
    params = {r.path: {p.alias for p in r.dependant.query_params}
              for r in app.routes if isinstance(r, APIRoute)}
    app.add_middleware(Guard, tokens=tokens, rules=needs, params=params,
                       counted=api_stats.refusal)
    _document_bearer(app)
    return app


def _document_bearer(app: FastAPI) -> None:
    """Declare the bearer token in the OpenAPI document (the routes name it in `security`)."""
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = plain()
            schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
                "type": "http", "scheme": "bearer",
                "description": "a token from `rocewatch token mint` (docs/api.md)"}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
