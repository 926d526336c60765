"""What the dashboard reads from the API, once per data set and fabric generation, shared by every
session for a few seconds.

Every open dashboard re-runs its script on each widget change and every refresh, and each new
browser tab is a new session; without this each run would ask the API again for the same status,
fabric, incidents and heat map. A run first asks the (cheap) fabric clock: its newest sample time
is the fabric's *generation*, and each read is kept in ``st.cache_resource`` under (API, token,
generation, refresh window, endpoint, parameters). New telemetry is a new generation, so it is
read at once; an answer is reused at most within one window of the refresh period (aligned wall
clock windows), so what changes without new samples (alerts, commands, silence) shows as soon as
on a page left open; a command sent from this dashboard drops the kept answers
(:meth:`Reads.forget`). Errors are never kept: the next run asks again. The answers are shared,
not copied (unpickling the status of 80,000 ports on every run cost 100 ms): nothing in the
dashboard changes a view it read (the views are frozen models).

A run that knows what it will read asks for it all at once (:meth:`Reads.prefetch`): the reads go
out together on a few threads and the sections pick them up in page order, so the banner waits
for the status alone and the heat map does not wait for the fabric's picture.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import streamlit as st
from pydantic import BaseModel

from ui.api.client import ApiClient
from ui.dashboard.session import client_for
from ui.query.views import (
    ActionList,
    Clock,
    FabricStatus,
    FabricView,
    HeatMap,
    IncidentList,
    SeriesSet,
    TopologyView,
)

#: how long an answer stays in memory at most (it is reused only within its refresh window)
TTL_S = 60.0

Params = tuple[tuple[str, Any], ...]
M = TypeVar("M", bound=BaseModel)

#: reads of one run in flight together (the API serves them on its own threads)
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rocewatch-read")


@st.cache_resource(ttl=TTL_S, max_entries=512, show_spinner=False)
def _read(api_url: str, token: str, generation: int | None, window: int, endpoint: str,
          params: Params) -> Any:
    """One API answer (the cache key is every argument; ``generation`` and ``window`` only key
    it)."""
    return getattr(client_for(api_url, token), endpoint)(**dict(params))


def _params(params: dict[str, Any]) -> Params:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                        for k, v in params.items()))


@dataclass(frozen=True)
class Reads:
    """The reads of one script run, at one generation of the fabric."""

    api_url: str
    token: str
    clock: Clock
    #: the refresh window this run is in (wall seconds // the refresh period)
    window: int

    @classmethod
    def start(cls, api_url: str, token: str, period_s: float) -> Reads:
        """Ask the fabric's clock (never kept): it names the generation this run reads; the
        answers are reused within the current ``period_s`` window of the wall clock."""
        return cls(api_url, token, client_for(api_url, token).clock(),
                   int(time.time() // max(period_s, 0.5)))

    @property
    def client(self) -> ApiClient:
        """The session's client, for what is not a read (commands)."""
        return client_for(self.api_url, self.token)

    def _get(self, model: type[M], endpoint: str, **params: Any) -> M:
        found = _read(self.api_url, self.token, self.clock.latest_sample_ns, self.window,
                      endpoint, _params(params))
        if not isinstance(found, model):
            raise TypeError(f"{endpoint} answered {type(found).__name__}, not {model.__name__}")
        return found

    def prefetch(self, *reads: Callable[[Reads], object]) -> list[Future[object]]:
        """Start ``reads`` (each a function of this object, e.g. ``lambda r: r.status()``) at
        once; a later read of the same data waits for the one in flight (the cache holds one
        computation per key) instead of asking again. Errors surface in the read itself."""
        return [_POOL.submit(read, self) for read in reads]

    def status(self, top: int = 10) -> FabricStatus:
        return self._get(FabricStatus, "status", top=top)

    def fabric(self, **params: Any) -> FabricView:
        return self._get(FabricView, "fabric", **params)

    def heatmap(self, **params: Any) -> HeatMap:
        return self._get(HeatMap, "heatmap", **params)

    def incidents(self, **params: Any) -> IncidentList:
        return self._get(IncidentList, "incidents", **params)

    def actions(self, **params: Any) -> ActionList:
        return self._get(ActionList, "actions", **params)

    def topology(self) -> TopologyView:
        return self._get(TopologyView, "topology")

    def series(self, device: str, port: str, metrics: Sequence[str], **params: Any) -> SeriesSet:
        return self._get(SeriesSet, "series", device=device, port=port, metrics=list(metrics),
                         **params)

    @staticmethod
    def forget() -> None:
        """Drop every kept answer (after a command: its effect is read at once)."""
        _read.clear()
