"""The REST API (FastAPI) over the one query layer: what the dashboard, the CLI and any script read.

Every read endpoint hands its parameters, as sent, to :class:`ui.query.layer.Query`, which
validates them
before any SQL exists; its :class:`~pipeline.errors.QueryError` becomes a 400 with
``{"error": "..."}``, a request FastAPI cannot parse a 422 of the same shape, a store failure a
503. Commands people enter are published on the bus by :mod:`ui.api.commands` (when the app has a
publisher) and answered with 202: remediation applies them and records an audit action.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Body, FastAPI, Header, Request
from fastapi import Query as Param
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pipeline.errors import BusError, QueryError, StoreError
from ui.api.commands import Command, CommandPublisher
from ui.query.layer import Query
from ui.query.views import (
    ActionList,
    AlertList,
    Clock,
    FabricStatus,
    Health,
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


@dataclass
class ApiStats:
    """What the API reports about itself in ``/healthz`` and the platform's health."""

    requests: int = 0
    client_errors: int = 0
    server_errors: int = 0
    commands: int = 0
    slowest_ms: float = 0.0
    by_route_ms: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "client_errors": self.client_errors,
                "server_errors": self.server_errors, "commands": self.commands,
                "slowest_ms": round(self.slowest_ms, 1),
                "last_ms": {k: round(v, 1) for k, v in self.by_route_ms.items()}}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message})


def create_app(query: Query, probes: Probes | None = None,
               publisher: CommandPublisher | None = None,
               stats: ApiStats | None = None, command_token: str = "") -> FastAPI:
    """The API over ``query``; ``probes`` reports the platform's loops for ``/healthz``;
    ``publisher`` enables ``POST /v1/commands``, which ``command_token`` (when set) guards."""
    app = FastAPI(
        title="rocewatch API",
        version="1",
        summary="History and live state of a RoCE fabric: series, alerts, incidents, actions.",
        description=(
            "Times are event time in ns since the epoch. 'now' is the fabric's clock: the newest "
            "sample's event time. Times and durations sent are read in the platform's one "
            "grammar (docs/time.md): instants as RFC 3339 with a zone, now-15m, @<Unix seconds> "
            "or ns; durations as 90s, 1h30m or a bare number of seconds; absurd values are a "
            "400. Counters are served as per-second rates. Errors are "
            '`{"error": "..."}` with 400 (a bad request, the message says what to send), 422 '
            "(a parameter of the wrong type) or 503 (the store or bus is unavailable)."),
    )
    api_stats = stats or ApiStats()
    app.state.stats = api_stats

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
        route = request.scope.get("route")
        if route is not None:
            api_stats.by_route_ms[getattr(route, "path", "?")] = ms
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
            where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("query", "body"))
            problems.append(f"{where or 'request'}: {err.get('msg', 'invalid')}")
        return _error(422, "; ".join(problems))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.get("/healthz", response_model=Health, tags=["platform"],
             responses={503: {"description": "degraded: the store or a loop is down"}})
    def healthz() -> JSONResponse:
        """The store's reachability, the fabric clock, and every platform loop's health."""
        loops = probes() if probes else {}
        loops = {**loops, "api": {**loops.get("api", {}), **api_stats.as_dict()}}
        health = query.health(loops)
        return JSONResponse(status_code=200 if health.status == "ok" else 503,
                            content=health.model_dump(mode="json"))

    @app.get("/v1/clock", response_model=Clock, tags=["fabric"])
    def clock() -> Clock:
        """The fabric's clock: what 'now' means for relative times."""
        return query.clock.now()

    @app.get("/v1/series", response_model=SeriesSet, tags=["telemetry"])
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

    @app.get("/v1/latest", response_model=LatestList, tags=["telemetry"])
    def latest(
        device: Annotated[str, Param(max_length=64)],
        port: Text = None,
        metric: Names = None,
        window: Annotated[str | None, Param(max_length=20, description=(
            "how far back counter rates look, " + SPAN_HELP + " (default 30s)"))] = None,
    ) -> LatestList:
        """Every metric of a switch (or one port): last gauge values, recent counter rates."""
        return query.latest(device, port, metric, window)

    @app.get("/v1/alerts", response_model=AlertList, tags=["alerts"])
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

    @app.get("/v1/incidents", response_model=IncidentList, tags=["alerts"])
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

    @app.get("/v1/actions", response_model=ActionList, tags=["actions"])
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

    @app.get("/v1/status", response_model=FabricStatus, tags=["fabric"])
    def status(
        top: Annotated[int, Param(ge=0, le=1000, description="busiest links to list")] = 20,
    ) -> FabricStatus:
        """Every link, host and switch that is not ok (worst first, with the alert that makes it
        so), how many are at each level, the busiest links, and whether telemetry is live."""
        return query.status(top)

    @app.get("/v1/topology", response_model=TopologyView, tags=["fabric"])
    def topology() -> TopologyView:
        """The fabric's switches, links and hosts (when known) and the devices seen."""
        return query.topology_view()

    if publisher is not None:
        commands = publisher

        @app.post("/v1/commands", status_code=202, tags=["commands"],
                  responses={400: {"description": "the target is not a fabric name"}})
        def command(body: Annotated[Command, Body()],
                    authorization: Annotated[str, Header()] = "") -> Any:
            """Approve or reject a runbook awaiting approval, record a repair, add or expire a
            silence, or resume automation. Accepted commands are applied by remediation, which
            records the outcome as an action (`GET /v1/actions?action=command`). When the API
            has a command token, send it as `Authorization: Bearer <token>`."""
            if command_token and not hmac.compare_digest(
                    authorization.encode(), f"Bearer {command_token}".encode()):
                return _error(401, "commands need Authorization: Bearer <the API's command "
                                   "token> (api.command_token)")
            sent = commands.publish(body)
            api_stats.commands += 1
            return {"accepted": True, "id": sent.id, "kind": sent.kind, "topic": commands.topic}

    return app
