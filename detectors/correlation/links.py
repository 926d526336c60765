"""Link symptoms joined from both ends: faulty links, flaps, links down.

A link is seen by the two switch ports at its ends (a host link only by its leaf port). Each end
reports what it receives: corruption (``fcs_errors``, ``optics_trend``) is counted by the receiver,
so the end that counts tells the direction; carrier changes and oper-status are seen by both.
Joining the ends gives one incident per link, named by the link (``leaf3~spine2``, or the host
for a host link), with a confidence that rises when both ends agree:

* a link down (``port_down`` at either end, admin up) is a ``link_down`` while it lasts, and
  explains the errors and pauses on its ends, whatever the link did before: a down link cannot be
  told from one more down episode of a flap until it comes back, and on-call needs to know it is
  down now (a link that flapped and then stayed down is down, not still flapping);
* a flap (``carrier_flap`` at either end) explains the down episodes and errors that come with it;
  while one of its episodes is confirmed down the flap stands beside the ``link_down``, which the
  correlator re-publishes as the flap's symptom once the link is back;
* otherwise corruption at either end makes a ``faulty_link``; errors at *both* ends of one link mean
  both directions corrupt (a shared cable or connector fault), while errors on most ports of one
  switch point at the switch rather than at any one link (lower confidence per link).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from detectors.correlation.incident import Finding
from pipeline.kinds import (
    ANOMALY,
    CARRIER_FLAP,
    FAULTY_LINK,
    FCS_ERRORS,
    LINK_DOWN,
    LINK_FLAP,
    OPTICS_TREND,
    PORT_DOWN,
)
from pipeline.model import Alert, Severity
from pipeline.topology.model import Port, Topology

CRITICAL_CORRUPTION = 1e-6
LINK_SYMPTOMS = frozenset({FCS_ERRORS, OPTICS_TREND, CARRIER_FLAP, PORT_DOWN, ANOMALY})


def link_findings(symptoms: Iterable[Alert], topology: Topology) -> list[Finding]:
    by_entity: dict[str, list[Alert]] = defaultdict(list)
    ends: dict[str, tuple[str, ...]] = {}
    corrupt_ports: dict[str, int] = defaultdict(int)
    for alert in symptoms:
        if alert.name not in LINK_SYMPTOMS or not alert.ports:
            continue
        port = Port.parse(alert.ports[0])
        entity = topology.entity_of(port)
        if entity == str(port):
            continue  # not a known link or host port
        by_entity[entity].append(alert)
        link = topology.link_by_id.get(entity)
        ends[entity] = (str(link.a), str(link.b)) if link else (str(port),)
        if alert.name == FCS_ERRORS:
            corrupt_ports[port.device] += 1
    out = []
    for entity, alerts in sorted(by_entity.items()):
        out.extend(_judge(entity, ends[entity], alerts, topology, corrupt_ports))
    return out


def _judge(entity: str, ends: tuple[str, ...], alerts: list[Alert], topology: Topology,
           corrupt_ports: dict[str, int]) -> list[Finding]:
    names = {a.name for a in alerts}
    at = {p: {a.name for a in alerts if a.ports and a.ports[0] == p} for p in ends}
    both = len(ends) == 2
    explains = set(ends)
    out = []
    if PORT_DOWN in names:
        downs = [a for a in alerts if a.name == PORT_DOWN]
        agree = both and all(PORT_DOWN in s for s in at.values())
        ev = {"ends_down": float(sum(PORT_DOWN in s for s in at.values()))}
        out.append(Finding(LINK_DOWN, entity, ends, downs, Severity.CRITICAL,
                           1.0 if agree or not both else 0.7, ev, explains,
                           f"{entity} is down while administratively up"))
    if CARRIER_FLAP in names:
        flaps = [a for a in alerts if a.name == CARRIER_FLAP]
        agree = both and all(CARRIER_FLAP in s for s in at.values())
        ev = {"bounces": max(a.evidence.get("bounces", 1.0) for a in flaps),
              "ends_agreeing": float(sum(CARRIER_FLAP in s for s in at.values()))}
        out.append(Finding(LINK_FLAP, entity, ends, flaps, Severity.CRITICAL,
                           1.0 if agree or not both else 0.8, ev, explains,
                           f"{entity} goes down and comes back"))
    if out:
        return out
    bad = [a for a in alerts if a.name in (FCS_ERRORS, OPTICS_TREND)]
    if not bad:
        return []
    receivers = sorted({a.ports[0] for a in bad})
    worst = max(a.evidence.get("corruption", 0.0) for a in bad)
    ev = {"corruption": worst, "ends_counting": float(len(receivers))}
    for a in bad:
        for key in ("fcs_per_s", "symbol_per_s", "slope"):
            if key in a.evidence:
                ev[key] = max(ev.get(key, 0.0), a.evidence[key])
    # a switch corrupting on many ports points at the switch, not at this one link
    device_wide = max(corrupt_ports[Port.parse(p).device] for p in receivers)
    confidence = 0.95 if device_wide < 3 else 0.6
    if both and len(receivers) == 2:
        summary = f"{entity} corrupts frames in both directions"
    else:
        direction = _direction(receivers[0], ends, topology)
        summary = f"{entity} corrupts frames {direction}"
    # CorrOpt: above ~1e-6 a corrupting link costs enough to be worth draining
    severity = Severity.CRITICAL if worst >= CRITICAL_CORRUPTION else Severity.WARNING
    return [Finding(FAULTY_LINK, entity, tuple(receivers), bad, severity, confidence, ev,
                    explains, summary)]


def _direction(receiver: str, ends: tuple[str, ...], topology: Topology) -> str:
    if len(ends) != 2:
        return f"toward {receiver}"
    sender = ends[1] if receiver == ends[0] else ends[0]
    return f"from {sender} to {receiver}"
