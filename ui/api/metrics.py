"""The API's part of the process's metrics (:mod:`pipeline.exposition`): the latency of every
request the gate lets through, by method, route (the route's template, ``/v1/series``) and status
code, as ``rocewatch_api_request_duration_seconds`` (what the gate refuses is counted in its own
stats: ``/healthz``); and ``GET /metrics``, the whole process's registry (every role this process
runs) on the API's own port, for Prometheus to scrape. It needs what a read needs: nothing, or a
viewer token when ``access.read`` asks for one (a Prometheus scrape config can send it)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response

from pipeline.exposition import Metrics

#: ``create_app``'s route declarer: (method, path, need, **route options) → decorator
Declare = Callable[..., Callable[[Any], Any]]


def instrument(app: FastAPI, declare: Declare, metrics: Metrics) -> None:
    """Time every request of ``app`` and declare ``GET /metrics`` (from inside ``create_app``,
    so the gate knows its rule)."""
    latency = metrics.histogram("rocewatch_api_request_duration_seconds",
                                "time to answer a request, by method, route and status",
                                ["method", "route", "code"])

    @app.middleware("http")
    async def measure(request: Request,
                      call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        t0 = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        latency.labels(request.method, route, str(response.status_code)).observe(
            time.perf_counter() - t0)
        return response

    @declare("GET", "/metrics", "read", include_in_schema=False)
    def exposition() -> Response:
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)
