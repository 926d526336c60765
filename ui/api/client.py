"""The one HTTP client of the rocewatch API, used by the dashboard and ``rocewatch query``.

Each call returns the API's answer parsed into its :mod:`ui.query.views` model. A refusal (4xx)
raises
:class:`~pipeline.errors.QueryError` with the API's message; an API that does not answer, or
answers 5xx, raises :class:`~pipeline.errors.StoreError` (the history cannot be reached) naming
the URL, so a person sees which address to fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from pipeline.config import ApiSettings, DashboardSettings, apply_env, read_yaml, validate
from pipeline.errors import QueryError, StoreError
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

M = TypeVar("M", bound=BaseModel)
Params = Mapping[str, str | int | float | bool | Sequence[str] | None]

DEFAULT_URL = "http://127.0.0.1:8080"


def configured_url() -> tuple[str, float]:
    """The API's URL and the dashboard's refresh period from the configuration:
    ``ROCEWATCH_DASHBOARD__API_URL``, else the file named by ``ROCEWATCH_CONFIG``
    (``dashboard.api_url``, else ``http://{api.host}:{api.port}``), else :data:`DEFAULT_URL`."""
    path = os.environ.get("ROCEWATCH_CONFIG", "")
    data = apply_env(read_yaml(path) if path else {})
    dash = validate(DashboardSettings, data.get("dashboard") or {}, "dashboard")
    if dash.api_url:
        return dash.api_url, dash.refresh_s
    if "api" in data:
        api = validate(ApiSettings, data.get("api") or {}, "api")
        if api.port:
            return f"http://{api.host}:{api.port}", dash.refresh_s
    return DEFAULT_URL, dash.refresh_s


def configured_token() -> str:
    """The API's command token, where this process was given one
    (``ROCEWATCH_API__COMMAND_TOKEN``, or ``api.command_token`` in ``ROCEWATCH_CONFIG``)."""
    path = os.environ.get("ROCEWATCH_CONFIG", "")
    data = apply_env(read_yaml(path) if path else {})
    api = validate(ApiSettings, data.get("api") or {}, "api")
    return api.command_token.get_secret_value()


class ApiClient:
    def __init__(self, base_url: str = DEFAULT_URL, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None, token: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s, transport=transport,
                                  headers=headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------------------

    def _request(self, method: str, path: str, params: Params | None = None,
                 body: Mapping[str, Any] | None = None) -> Any:
        query = _clean(params or {})
        try:
            resp = self._http.request(method, path, params=query, json=body)
        except httpx.HTTPError as exc:
            raise StoreError(f"the rocewatch API at {self.base_url} did not answer "
                             f"({type(exc).__name__}: {exc}); is it running? (--api URL)") from exc
        if resp.status_code >= 400:
            try:
                message = str(resp.json().get("error") or resp.text)
            except ValueError:
                message = resp.text[:300]
            if resp.status_code >= 500:
                raise StoreError(f"{self.base_url}{path}: {resp.status_code}: {message}")
            raise QueryError(message)
        return resp.json()

    def _get(self, model: type[M], path: str, params: Params | None = None) -> M:
        return model.model_validate(self._request("GET", path, params))

    # -- endpoints ------------------------------------------------------------------------------

    def health(self) -> Health:
        """``/healthz``: a degraded platform answers 503 with the same body."""
        try:
            resp = self._http.get("/healthz")
        except httpx.HTTPError as exc:
            raise StoreError(f"the rocewatch API at {self.base_url} did not answer: {exc}") \
                from exc
        return Health.model_validate(resp.json())

    def clock(self) -> Clock:
        return self._get(Clock, "/v1/clock")

    def status(self, top: int = 20) -> FabricStatus:
        return self._get(FabricStatus, "/v1/status", {"top": top})

    def topology(self) -> TopologyView:
        return self._get(TopologyView, "/v1/topology")

    def alerts(self, **params: Any) -> AlertList:
        return self._get(AlertList, "/v1/alerts", params)

    def incidents(self, **params: Any) -> IncidentList:
        return self._get(IncidentList, "/v1/incidents", params)

    def actions(self, **params: Any) -> ActionList:
        return self._get(ActionList, "/v1/actions", params)

    def series(self, device: str, port: str, metrics: Sequence[str], **params: Any) -> SeriesSet:
        return self._get(SeriesSet, "/v1/series",
                         {"device": device, "port": port, "metric": list(metrics), **params})

    def latest(self, device: str, **params: Any) -> LatestList:
        return self._get(LatestList, "/v1/latest", {"device": device, **params})

    def command(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Publish a command (approve, reject, repair, silence, expire_silence, resume)."""
        answer: dict[str, Any] = self._request("POST", "/v1/commands", body=body)
        return answer


def _clean(params: Params) -> list[tuple[str, str | int | float | bool | None]]:
    """Query parameters without the unset ones; lists repeat the key."""
    out: list[tuple[str, str | int | float | bool | None]] = []
    for key, value in params.items():
        if value is None or value in ("", []):
            continue
        if isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        elif isinstance(value, (list, tuple)):
            out.extend((key, str(v)) for v in value)
        else:
            out.append((key, str(value)))
    return out
