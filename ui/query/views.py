"""The read side's answers: the shapes the query layer returns, the API serves and the dashboard
and CLI parse. One definition each, so the OpenAPI document, the JSON and the Python agree.

Times are integer nanoseconds since the epoch (event time); rates are per second.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.entities import EntityKind

Level = Literal["critical", "warning", "info", "ok", "nodata"]

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
    drained: str | None = Field(
        default=None, description="in maintenance: drained or isolated, by whom and since when")


class Drained(View):
    """A link drained or a host isolated on purpose (maintenance), as remediation recorded it."""

    target: str
    kind: Literal["link", "host"]
    state: Literal["held", "soaking"] = Field(
        description="held: drained or isolated; soaking: enabled again after a repair, on trial")
    origin: str = Field(description="runbook (an incident), operator (a command) or te")
    by: str = Field(description="the person, the TE controller's requester, or the incident")
    run: str = Field(description="the remediation run holding it ('' for a TE-reported drain)")
    since_ns: int
    phase: str
    summary: str


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
    drained: list[Drained] = Field(default_factory=list,
                                   description="links drained and hosts isolated on purpose")


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


# -- the fabric at scale: groups → switches → ports, the heat map, an incident's pause tree -------

GroupKind = Literal["zone", "aggregation", "fabric"]


class SwitchHealth(View):
    """A switch with the worst of itself, its links, its hosts and its ports rolled up."""

    name: str
    role: str = Field(description="leaf, spine or agg")
    group: str = Field(description="its group: a zone (z3), the aggregation tier (agg), fabric")
    level: Level
    worst: EntityStatus | None = Field(description="the worst entity rolled into it")
    problems: int = Field(description="entities on it that are not ok (itself, links, hosts)")
    drained: int = Field(description="of its links and hosts, how many are in maintenance")
    util: float | None = Field(description="its busiest port's utilisation, 0..1")
    pfc_rx: float | None = Field(description="PFC pause frames/s received, summed over ports")


class GroupHealth(View):
    """A zone, the aggregation tier, or a two-tier fabric, rolled up from its switches."""

    id: str
    kind: GroupKind
    level: Level
    switches: int
    roles: dict[str, int] = Field(description="switches per role (leaf, spine, agg)")
    hosts: int
    levels: dict[str, int] = Field(description="switches per rolled-up level")
    problems: int = Field(description="entities in it that are not ok")
    drained: int
    worst: list[EntityStatus] = Field(description="its worst entities (at most 3), worst first")


class PortHealth(View):
    port: str = Field(description="device:port")
    entity: str = Field(description="the link or host on it")
    peer: str = Field(description="what it reaches: the far switch, or the host")
    level: Level
    alert: str = Field(description="worst alert on the port or its entity ('' when ok)")
    drained: str | None = None
    values: dict[str, float | None] = Field(description="the heat map's values (as of as_of_ns)")


class TreeNode(View):
    name: str
    role: str = Field(description="host, leaf, spine or agg")
    group: str
    depth: int = Field(description="hops from the root (the root is 0)")
    level: Level


class TreeEdge(View):
    link: str = Field(description="the link (or host) the pause crosses")
    upstream: str = Field(description="the side that is paused: it holds traffic for downstream")
    downstream: str = Field(description="the side nearer the root, sending the pauses")
    level: Level
    ports: list[str] = Field(description="the ports with pause symptoms on this hop")


class PauseTree(View):
    """An incident's pause tree over the fabric: who pauses whom, from the root outwards."""

    fingerprint: str
    incident: str
    entity: str
    root: str = Field(description="the node the pauses start from (a host or a switch)")
    nodes: list[TreeNode] = Field(description="root first, then by depth")
    edges: list[TreeEdge]
    groups: list[str] = Field(description="the zones (and tiers) the tree reaches")


class FabricView(View):
    """The fabric in its hierarchy: every group worst first; with a group or switch chosen, its
    switches or ports; with an incident chosen, its pause tree."""

    clock: Clock
    tiers: int
    scope: Literal["fabric", "group", "switch"]
    groups: list[GroupHealth] = Field(description="every group, worst first")
    group: GroupHealth | None = None
    switches: list[SwitchHealth] = Field(
        description="the chosen group's switches in topology order (all, with scope=group)")
    switch: SwitchHealth | None = None
    ports: list[PortHealth] = Field(description="the chosen switch's connected ports")
    tree: PauseTree | None = None
    as_of_ns: int | None = Field(description="when the port values were measured (None: none)")


class HeatColumn(View):
    key: str
    title: str
    unit: str
    high: float = Field(description="where the colour scale saturates")


class HeatRow(View):
    port: str
    group: str
    entity: str
    peer: str
    level: Level
    values: list[float | None] = Field(description="one per column; None: not reported")


class HeatMap(View):
    """The ports that matter: ranked by one column, narrowed by scope and search."""

    clock: Clock
    as_of_ns: int | None
    source: str = Field(description="where the values come from (a rollup's minute, samples)")
    scope: str
    sort: str
    search: str
    columns: list[HeatColumn]
    rows: list[HeatRow]
    matched: int = Field(description="ports in scope matching the search")
    ports: int = Field(description="ports in scope")
