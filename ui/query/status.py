"""The fabric's status: every link, host and switch at its worst current alert, and utilisation.

An alert touches its own entity and, through the topology, the link or host of each of its ports
(a symptom on ``spine1:Ethernet3`` colours the link ``leaf3~spine1``). An entity's level is its
worst touching alert's severity; a symptom an incident explains counts at most as ``warning``, so
red marks the roots, not every victim. Switches whose telemetry stopped are ``nodata``. Only
entities that are not ok are listed, so the answer stays small on a fabric of thousands of ports.
An entity in maintenance (a drained link, an isolated host, or one of their ports) says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pipeline.entities import entity_kind
from pipeline.errors import ConfigError
from pipeline.topology.model import Port, Topology
from ui.query.alerts import severity_rank
from ui.query.latest import LatestRow
from ui.query.views import (
    LEVELS,
    AlertView,
    Drained,
    EntityStatus,
    Level,
    Utilisation,
)


def touched(alert: AlertView, topology: Topology | None,
            owners: Mapping[str, str] | None = None) -> set[str]:
    """The entities an alert colours: its own and those of its ports (``owners``: the link or
    host on each ``device:port`` of the topology, when the caller has them at hand)."""
    out = {alert.entity}
    if owners is not None:
        out.update(owner for text in alert.ports if (owner := owners.get(text)) is not None)
        return out
    if topology is None:
        return out
    for text in alert.ports:
        try:
            port = Port.parse(text)
        except ConfigError:
            continue
        owner = topology.entity_of(port)
        if owner != str(port):
            out.add(owner)
    return out


def alert_level(alert: AlertView, explained: set[str]) -> Level:
    level: Level = "critical" if alert.severity == "critical" else (
        "warning" if alert.severity == "warning" else "info")
    if not alert.root_cause and (alert.inhibited_by or alert.fingerprint in explained):
        return "info" if level == "info" else "warning"
    return level


@dataclass
class _Worst:
    level: Level
    alert: AlertView
    count: int = 1
    order: tuple[int, int, int] = field(default=(0, 0, 0))


def entity_statuses(alerts: Sequence[AlertView], topology: Topology | None,
                    stale_devices: Sequence[str],
                    drained: Sequence[Drained] = (),
                    owners: Mapping[str, str] | None = None) -> list[EntityStatus]:
    """Every entity that is not ok, worst first (then by name); ``owners`` as for
    :func:`touched`."""
    held = {d.target: d.summary for d in drained}
    if topology is not None:
        for d in drained:
            owner = topology.link_by_id.get(d.target)
            ports = owner.ends() if owner is not None else (
                (topology.host_by_name[d.target].port,) if d.target in topology.host_by_name
                else ())
            held.update({str(port): d.summary for port in ports})
    explained = {fp for a in alerts if a.root_cause for fp in a.explains}
    worst: dict[str, _Worst] = {}
    for alert in alerts:
        level = alert_level(alert, explained)
        order = (LEVELS.index(level), 0 if alert.root_cause else 1, severity_rank(alert.severity))
        for entity in touched(alert, topology, owners):
            cur = worst.get(entity)
            if cur is None:
                worst[entity] = _Worst(level, alert, 1, order)
                continue
            cur.count += 1
            if order < cur.order:
                cur.level, cur.alert, cur.order = level, alert, order
    # built without validation: every field is typed already (thousands in a storm)
    out = [
        EntityStatus.model_construct(
            entity=name, kind=entity_kind(name, topology), level=w.level, alert=w.alert.name,
            fingerprint=w.alert.fingerprint, root_cause=w.alert.root_cause,
            summary=w.alert.summary, since_ns=w.alert.starts_ns, alerts=w.count,
            drained=held.get(name))
        for name, w in worst.items()
    ]
    for device in stale_devices:
        if device not in worst:
            out.append(EntityStatus(entity=device, kind=entity_kind(device, topology),
                                    level="nodata", alert="no_telemetry", fingerprint="",
                                    root_cause=False, summary=f"no samples from {device}",
                                    since_ns=0, alerts=0))
    out.sort(key=lambda e: (LEVELS.index(e.level), not e.root_cause, e.entity))
    return out


def level_counts(statuses: Sequence[EntityStatus], topology: Topology | None,
                 devices_seen: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per kind, how many entities sit at each level (``ok`` is the rest of the topology)."""
    totals: dict[str, int] = {}
    if topology is not None:
        totals = {"link": len(topology.links), "host": len(topology.hosts),
                  "switch": len(topology.switches)}
    else:
        totals = {"switch": len(devices_seen)}
    counts: dict[str, dict[str, int]] = {}
    for status in statuses:
        per = counts.setdefault(status.kind, {})
        per[status.level] = per.get(status.level, 0) + 1
    for kind, total in totals.items():
        per = counts.setdefault(kind, {})
        per["ok"] = max(0, total - sum(per.values()))
    return counts


def utilisation(rows: Sequence[LatestRow], topology: Topology | None,
                top: int) -> list[Utilisation]:
    """The ``top`` busiest links and hosts (by utilisation, or by Gbps without a topology)."""
    by_port: dict[tuple[str, str], dict[str, float]] = {}
    for row in rows:
        if row.value is None:
            continue
        by_port.setdefault((row.device, row.port), {})[row.metric] = row.value
    best: dict[str, Utilisation] = {}
    for (device, port_name), rates in by_port.items():
        in_gbps = rates.get("if_in_octets", 0.0) * 8 / 1e9
        out_gbps = rates.get("if_out_octets", 0.0) * 8 / 1e9
        port = Port(device, port_name)
        entity = str(port)
        speed = 0.0
        if topology is not None:
            entity = topology.entity_of(port)
            att = topology.attachment(port)
            speed = att.gbps if att is not None else 0.0
        util = max(in_gbps, out_gbps) / speed if speed > 0 else None
        candidate = Utilisation(entity=entity, device=device, port=port_name, in_gbps=in_gbps,
                                out_gbps=out_gbps, util=util)
        cur = best.get(entity)
        if cur is None or _busy(candidate) > _busy(cur):
            best[entity] = candidate
    return sorted(best.values(), key=_busy, reverse=True)[:top]


def _busy(u: Utilisation) -> float:
    return u.util if u.util is not None else max(u.in_gbps, u.out_gbps) / 1e3
