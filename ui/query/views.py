"""The read side's answers: the shapes the query layer returns, the API serves and the dashboard
and CLI parse. One definition each, so the OpenAPI document, the JSON and the Python agree.

Times are integer nanoseconds since the epoch (event time); rates are per second.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Level = Literal["critical", "warning", "info", "ok", "nodata"]
EntityKind = Literal["link", "host", "switch", "port", "other"]

#: worst first; the order colours and sorts everything
LEVELS: tuple[Level, ...] = ("critical", "warning", "info", "nodata", "ok")


class View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Clock(View):
    """The fabric's clock: the newest event time in the store ("now" for relative times)."""

    now_ns: int = Field(description="what 'now' means for this answer (ns)")
    latest_sample_ns: int | None = Field(description="newest sample event time; None: no data")
    wall_ns: int = Field(description="the API process's wall clock when it answered")
    source: Literal["data", "wall"] = Field(description="'wall' when the store has no samples")


class Series(View):
    qual: int | None = Field(description="PFC priority or queue index; None for port metrics")
    points: list[tuple[int, float | None]] = Field(
        description="(bucket start ns, value); value None means no sample in that bucket")


class SeriesResult(View):
    device: str
    port: str
    metric: str
    kind: Literal["counter", "gauge"]
    unit: str = Field(description="unit of the values: counters are rates (unit/s)")
    qualifier: str | None
    agg: str = Field(description="rate (counters) or mean/max/min/last (gauges) per bucket")
    start_ns: int
    end_ns: int
    step_ns: int
    source: str = Field(description="the table the answer came from")
    series: list[Series]


class SeriesSet(View):
    clock: Clock
    results: list[SeriesResult]


class AlertView(View):
    fingerprint: str
    name: str
    entity: str
    severity: str
    status: Literal["firing", "resolved"]
    root_cause: bool = Field(description="True for an incident, False for a symptom")
    confidence: float
    starts_ns: int
    updated_ns: int
    ends_ns: int | None
    ports: list[str]
    explains: list[str] = Field(description="fingerprints of the symptoms this incident explains")
    inhibited_by: str | None = Field(description="fingerprint of the incident explaining this")
    source: str
    labels: dict[str, str]
    annotations: dict[str, str]
    evidence: dict[str, float]

    @property
    def summary(self) -> str:
        return (self.annotations.get("summary") or self.annotations.get("description")
                or f"{self.name} on {self.entity}")


class Incident(AlertView):
    symptoms: list[AlertView] = Field(description="the firing symptoms this incident explains")


class AlertList(View):
    clock: Clock
    mode: Literal["active", "at", "range"]
    at_ns: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    alerts: list[AlertView]


class IncidentList(View):
    clock: Clock
    mode: Literal["active", "at", "range"]
    incidents: list[Incident]
    unexplained: list[AlertView] = Field(
        description="firing symptoms no incident explains (look at these too)")


class ActionView(View):
    id: str
    at_ns: int
    action: str
    target: str
    alert_fingerprint: str
    alert_name: str
    mode: str
    outcome: str
    detail: str
    steps: list[dict[str, Any]]


class ActionList(View):
    clock: Clock
    start_ns: int
    end_ns: int
    actions: list[ActionView]


class LatestValue(View):
    port: str
    metric: str
    qual: int | None
    unit: str
    value: float | None = Field(description="last value (gauges) or latest rate (counters)")
    at_ns: int


class LatestList(View):
    clock: Clock
    device: str
    values: list[LatestValue]


class EntityStatus(View):
    entity: str
    kind: EntityKind
    level: Level
    alert: str = Field(description="name of the worst alert on it")
    fingerprint: str
    root_cause: bool
    summary: str
    since_ns: int
    alerts: int = Field(description="firing alerts touching this entity")


class Utilisation(View):
    entity: str
    device: str
    port: str
    in_gbps: float
    out_gbps: float
    util: float | None = Field(description="max(in, out) / port speed, 0..1; None: unknown")


class Telemetry(View):
    state: Literal["live", "silent", "empty"]
    latest_ns: int | None
    silent_s: float | None = Field(
        description="wall seconds since the data clock last moved, as this API process saw it")
    devices_seen: int
    stale_devices: list[str] = Field(description="devices whose samples stopped arriving")


class FabricStatus(View):
    clock: Clock
    telemetry: Telemetry
    counts: dict[str, dict[str, int]] = Field(
        description="per entity kind, how many entities are at each level")
    entities: list[EntityStatus] = Field(description="every entity that is not ok, worst first")
    top_utilisation: list[Utilisation]


class TopologyView(View):
    known: bool
    spines: list[str]
    leaves: list[str]
    links: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    devices: list[str] = Field(description="devices seen in telemetry")


class Health(View):
    status: Literal["ok", "degraded"]
    store: str
    clock: Clock | None
    loops: dict[str, dict[str, Any]]
