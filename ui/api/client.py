"""The one HTTP client of the rocewatch API, used by the dashboard and ``rocewatch query``.

Each call returns the API's answer parsed into its :mod:`ui.query.views` model. A refusal (4xx)
raises :class:`~pipeline.errors.QueryError` with the API's message; a refused token is its
subclass :class:`~pipeline.errors.AccessDenied` (``status`` 401: none, or one the API does not
know; 403: its role may not do this); an API that does not answer, or answers 5xx, raises
:class:`~pipeline.errors.StoreError` (the history cannot be reached) naming the URL, so a person
sees which address to fix.

The client reads no configuration itself: whoever builds it passes the URL and the token, from
the one loader (:meth:`ApiClient.from_settings`, as ``rocewatch query`` does: ``api.token``) or
from its own command line (the dashboard).

Tokens, for a client that asks a person for one (the dashboard, once per session)::

    client = ApiClient(url, token=typed)       # every request sends Authorization: Bearer <token>
    who = client.identity()                    # Identity(name, role, may): AccessDenied if refused
    client.command({"kind": "approve", "target": "leaf3~spine2", "comment": "optics checked"})

``who.may`` lists ``read`` and the command kinds the token's role may give (offer only those). A
command carries no ``by``: the API records the token's identity as its actor, and refuses a body
that names one (422). Reads need no token unless the API is configured so (``access.read:
token``); then a read without one raises AccessDenied too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from pipeline.config import ApiSettings, DashboardSettings
from pipeline.errors import AccessDenied, QueryError, StoreError
from ui.api.access import Identity
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

M = TypeVar("M", bound=BaseModel)
Params = Mapping[str, str | int | float | bool | Sequence[str] | None]


#: hosts an API listens on that a client reaches on loopback
_WILDCARD_HOSTS = ("", "0.0.0.0", "::")


def http_url(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 host in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def api_url(api: ApiSettings, dashboard: DashboardSettings) -> str:
    """Where a client reaches the API: ``dashboard.api_url`` when set, else the address the API
    role listens on (``api.host:api.port``; a wildcard host is reached on loopback)."""
    if dashboard.api_url:
        return dashboard.api_url
    return http_url("127.0.0.1" if api.host in _WILDCARD_HOSTS else api.host, api.port)


#: the API of the default settings
DEFAULT_URL = api_url(ApiSettings(), DashboardSettings())


class ApiClient:
    def __init__(self, base_url: str = DEFAULT_URL, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None, token: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s, transport=transport,
                                  headers=headers)

    @classmethod
    def from_settings(cls, api: ApiSettings, dashboard: DashboardSettings, url: str = "",
                      timeout_s: float = 10.0) -> ApiClient:
        """A client of the configured API (:func:`api_url`, unless ``url`` names another) that
        sends the configured token (``api.token``)."""
        return cls(url or api_url(api, dashboard), timeout_s=timeout_s,
                   token=api.token.get_secret_value())

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
            if resp.status_code in (401, 403):
                raise AccessDenied(message, resp.status_code)
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

    def identity(self) -> Identity:
        """Who this client's token stands for and what it may do (``/v1/identity``)."""
        return self._get(Identity, "/v1/identity")

    def clock(self) -> Clock:
        return self._get(Clock, "/v1/clock")

    def status(self, top: int = 20) -> FabricStatus:
        return self._get(FabricStatus, "/v1/status", {"top": top})

    def topology(self) -> TopologyView:
        return self._get(TopologyView, "/v1/topology")

    def fabric(self, **params: Any) -> FabricView:
        """``/v1/fabric``: groups worst first; ``group=``, ``switch=``, ``incident=``."""
        return self._get(FabricView, "/v1/fabric", params)

    def heatmap(self, **params: Any) -> HeatMap:
        """``/v1/heatmap``: ``scope=``, ``sort=``, ``search=``, ``top=``."""
        return self._get(HeatMap, "/v1/heatmap", params)

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
        """Publish a command (approve, reject, repair, silence, expire_silence, resume), given by
        this client's token's identity; the answer has its ``id`` and ``by``."""
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
