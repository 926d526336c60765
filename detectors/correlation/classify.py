"""Root classification: what sits at the root of each pause tree, and which incident that is.

Each root of the pause graph (:mod:`detectors.correlation.pause_graph`) is judged from the symptoms
on it
(Hawkeye's signatures, read from counters):

=========================================  ===================================================
root                                       incident
=========================================  ===================================================
a host whose leaf port is stuck            ``pfc_storm`` on the host (a NIC that stopped
(``pfc_watchdog``: paused, no drain)       draining: Guo et al. SIGCOMM'16)
a host pausing while taking < line rate    ``slow_receiver`` on the host
(``host_slow_drain``)
a host port at line rate with demand far   ``incast`` on the host (many senders, one receiver)
above it (``egress_oversubscribed``)
a switch pausing with no overload or ECN   ``buffer_misconfig`` on the switch (XOFF set too
(``pause_without_load``)                   low: PFC fires before any real congestion or ECN)
a leaf (or a spine, over its aggregation   ``ecmp_imbalance`` on the switch (hash collision:
uplinks) whose ECMP group is uneven        its hot uplink's congestion is explained)
(``uplink_imbalance``)
a set of ports waiting on each other with  ``pfc_deadlock`` on the links of the cycle
no way out, every one stuck
=========================================  ===================================================

A congestion root that matches none of these (a busy port doing its job) is not an incident: its
symptoms stay visible, unexplained, and nobody is paged for benign congestion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from detectors.correlation.incident import Finding
from detectors.correlation.pause_graph import PauseGraph, device_node, host_node, strongly_connected
from detectors.rules.pfc_hold import PfcHoldOptions
from pipeline.kinds import (
    BUFFER_CONFIG_DIFF,
    BUFFER_MISCONFIG,
    ECMP_IMBALANCE,
    EGRESS_OVERSUBSCRIBED,
    HOST_SLOW_DRAIN,
    INCAST,
    PAUSE_WITHOUT_LOAD,
    PFC_DEADLOCK,
    PFC_HOLD,
    PFC_PAUSING,
    PFC_STORM,
    PFC_WATCHDOG,
    SLOW_RECEIVER,
    UPLINK_IMBALANCE,
)
from pipeline.model import Alert, Severity
from pipeline.topology.model import Host, Port, Topology


def host_findings(graph: PauseGraph, topology: Topology,
                  habits: frozenset[str] | set[str] = frozenset()) -> list[Finding]:
    """Storms, slow receivers and incasts, each rooted at a host's leaf port (``habits``: ports
    whose saturation counts as habitual beside those the rule says are:
    :mod:`detectors.correlation.aftermath`)."""
    out = []
    converging = converging_senders(graph, topology, habits)
    # only a port with one of the three signatures can root a finding here
    signed = {port for name in (PFC_WATCHDOG, HOST_SLOW_DRAIN, EGRESS_OVERSUBSCRIBED)
              for port in graph.symptoms.ports_named(name)}
    for host in topology.hosts_at(signed):
        label = str(host.port)
        here = graph.symptoms.on(label)
        if not here:
            continue
        by_name = {a.name: a for a in here}
        if PFC_WATCHDOG in by_name:
            a = by_name[PFC_WATCHDOG]
            stuck = storm_stuck(a.evidence)
            out.append(Finding(PFC_STORM, host.name, (label,), [a], Severity.CRITICAL,
                               0.5 + 0.5 * stuck, dict(a.evidence),
                               _host_tree(graph, host, topology),
                               f"{host.name} pauses {label} continuously and takes nothing"))
        elif HOST_SLOW_DRAIN in by_name:
            a = by_name[HOST_SLOW_DRAIN]
            duty = min(1.0, a.evidence.get("pause_share", 0.0) / 0.5)
            out.append(Finding(SLOW_RECEIVER, host.name, (label,), [a], Severity.WARNING,
                               0.5 + 0.5 * duty, dict(a.evidence),
                               _host_tree(graph, host, topology),
                               f"{host.name} drains below line rate and pauses {label}"))
        elif EGRESS_OVERSUBSCRIBED in by_name and _saturated(by_name[EGRESS_OVERSUBSCRIBED]):
            a = by_name[EGRESS_OVERSUBSCRIBED]
            fan_in = converging.get(label)
            if fan_in is None or len(fan_in.senders) < INCAST_MIN_SENDERS:
                continue  # load: P is one of the held senders' many destinations
            evidence = {**a.evidence, "senders": float(len(fan_in.senders)),
                        "demand_ratio": fan_in.demand_ratio,
                        "concentration": fan_in.concentration}
            n = len(fan_in.senders)
            out.append(Finding(INCAST, host.name, (label,), [a], Severity.WARNING,
                               min(1.0, 0.5 + 0.05 * n), evidence,
                               _host_tree(graph, host, topology),
                               f"{host.name} receives from {n} senders held to their share of "
                               "its line rate"))
    return out


def _host_tree(graph: PauseGraph, host: Host, topology: Topology) -> set[str]:
    """The pause tree of a host's root: asked only of a host that is one (every host port that
    pauses or queues would otherwise cost a walk of the graph each step)."""
    label = str(host.port)
    return _ports(graph, graph.ancestors([host_node(host.name), label]) | {label}, topology)


#: an incast is at least this many senders converging on one receiver
INCAST_MIN_SENDERS = 2
#: a converging sender sends at most this many times its fair share of the receiver: PFC shares
#: the receiver's line rate by what each ingress offers, not exactly per sender, and a sender may
#: carry some traffic of its own beside the incast
FAIR_SHARE_SLACK = 2.0
#: an oversubscribed egress below this utilisation has stopped being fed
SATURATED_UTIL = 0.5


@dataclass
class FanIn:
    """The senders converging on one saturated host port."""

    senders: list[str]
    #: their line rates over the port's: what they would send unpaused (they are backlogged)
    demand_ratio: float
    #: what the port delivers over what they send: near 1 when they send to it alone
    concentration: float


def converging_senders(graph: PauseGraph, topology: Topology,
                       habits: frozenset[str] | set[str] = frozenset()) -> dict[str, FanIn]:
    """Per saturated host port P (but a habitual one, :func:`habitual`, or one of ``habits``):
    the held senders whose traffic converges on it.

    When P is oversubscribed, PFC holds the excess back hop by hop to the sending NICs (hosts
    paused by their leaf, ``pfc_pausing``, whose pause path leads to P). A held NIC is backlogged:
    it sends at line rate whenever it is not paused, so its pause share says how long it waits,
    not how much it wanted to send — a sender offering 40 % of its line rate and one offering all
    of it look alike once both are held. What tells them apart is where their traffic goes. P
    delivers its line rate C, shared among the traffic that converges on it, so N senders whose
    traffic is for P each get about C / N through, whatever they offer: a sender that sends
    several times its share of P sends most of it elsewhere (P is one of many destinations, as in
    random many-to-many traffic, or the sender is a victim of congestion spreading) and is not
    converging on P. Senders are dropped until every remaining one sends at most
    ``FAIR_SHARE_SLACK`` times its share of C; the ones left converge. Senders held by a deadlock
    are left out (the cycle throttles them, not P). Senders that converge on several saturated
    ports are counted at one (:func:`_one_root_each`).

    For senders on P's own leaf, where their traffic goes is measured: everything the leaf's hosts
    send either leaves by the fabric or reaches another of its hosts, so together they can send
    P no more than the leaf's host-to-host traffic (``local_in`` of P's symptom). Held neighbours
    that send more than ``FAIR_SHARE_SLACK`` times that send most of it up into the fabric: they
    are held because their ingress buffers hold a little of P's queue (head-of-line blocking
    under load that fills P from elsewhere), not because they flood P, and do not converge."""
    flooded_at = graph.symptoms.ports_named(EGRESS_OVERSUBSCRIBED)
    roots = {str(h.port): h for h in topology.hosts_at(flooded_at)
             if str(h.port) not in habits
             and any(_saturated(a) and not habitual(a) for a in graph.symptoms.on(str(h.port)))}
    out: dict[str, FanIn] = {}
    if not roots:
        return out
    stalled = {p for cycle in _cycles(graph, _held(graph, topology)) for p in cycle}
    held: dict[str, list[tuple[str, float, float, str]]] = {}
    for host in topology.hosts_at(graph.symptoms.ports_named(PFC_PAUSING)):
        pausing = [a for a in graph.symptoms.on(str(host.port)) if a.name == PFC_PAUSING]
        if not pausing:
            continue
        below = graph.descendants(host_node(host.name))
        if below & stalled:
            continue
        line = host.gbps * 1e9
        sent = max(a.evidence.get("inbound", 0.0) for a in pausing) * line
        for root in below & set(roots):
            held.setdefault(root, []).append((host.name, sent, line, host.port.device))
    for root, senders in held.items():
        port = roots[root]
        flooded = [a for a in graph.symptoms.on(root) if a.name == EGRESS_OVERSUBSCRIBED]
        util = max((a.evidence.get("util", 0.0) for a in flooded), default=0.0)
        capacity = util * port.gbps * 1e9
        local_in = min((a.evidence.get("local_in", math.inf) for a in flooded), default=math.inf)
        local = [s for s in senders if s[3] == port.port.device]
        local_bps = local_in * port.gbps * 1e9
        conv = senders
        if sum(s[1] for s in local) > FAIR_SHARE_SLACK * local_bps:
            conv = [s for s in senders if s not in local]
        while conv:
            share = capacity / len(conv)
            keep = [s for s in conv if s[1] <= FAIR_SHARE_SLACK * share]
            if len(keep) == len(conv):
                break
            conv = keep
        if not conv:
            continue
        sent = sum(s[1] for s in conv)
        out[root] = FanIn([s[0] for s in conv], sum(s[2] for s in conv) / max(capacity, 1.0),
                          capacity / max(sent, 1.0))
    return _one_root_each(out, {root: _congestion(graph.symptoms.on(root)) for root in out})


def _congestion(symptoms: list[Alert]) -> tuple[float, float, float]:
    """How plainly a saturated port is congested, to choose between roots: the ECN marking it
    shows (-1 where its switch reports none), its standing queue, its utilisation."""
    flooded = [a for a in symptoms if a.name == EGRESS_OVERSUBSCRIBED]

    def most(key: str, none: float) -> float:
        found = [v for a in flooded if math.isfinite(v := a.evidence.get(key, none))]
        return max(found, default=none)

    return most("ecn", -1.0), most("queue_bytes", -1.0), most("util", 0.0)


def _one_root_each(fan_ins: dict[str, FanIn],
                   congestion: dict[str, tuple[float, float, float]]) -> dict[str, FanIn]:
    """The fan-ins left when held senders are counted at one root each. A NIC is held by the
    congestion its paused traffic waits behind, but its pause tree can reach several saturated
    host ports (the senders of one incast pause spines that also feed a busy neighbour), and each
    of them would count it. Strongest first (most converging senders, then the more plainly
    congested port, :func:`_congestion`), a root whose senders are mostly a stronger root's is
    that root's echo, not an incast of its own."""
    kept: dict[str, FanIn] = {}
    for root in sorted(fan_ins, key=lambda r: (-len(fan_ins[r].senders),
                                               tuple(-x for x in congestion[r]), r)):
        mine = set(fan_ins[root].senders)
        if any(2 * len(mine & set(k.senders)) > len(mine) for k in kept.values()):
            continue
        kept[root] = fan_ins[root]
    return kept


def device_findings(graph: PauseGraph, device_symptoms: list[Alert],
                    topology: Topology) -> list[Finding]:
    """Switch-level roots: misconfigured buffers (from the configuration, or from counters that
    pause with no overload behind them), uneven ECMP groups."""
    out = []
    misconfig: dict[str, list[Alert]] = {}
    for alert in device_symptoms:
        device = alert.entity
        ports = [str(p) for p in topology.ports(device)]
        if alert.name == BUFFER_CONFIG_DIFF:
            misconfig.setdefault(device, []).insert(0, alert)  # the configuration says so
        elif alert.name == PAUSE_WITHOUT_LOAD:
            shallow = alert.evidence.get("pfc_before_ecn", 0.0) > 0
            if not shallow and any(graph.is_blocked(p) for p in ports):
                continue  # its pauses pass on congestion seen on its own egress
            misconfig.setdefault(device, []).append(alert)
        elif alert.name == UPLINK_IMBALANCE:
            group = topology.up_links(device)  # a leaf's to its spines, a spine's to the aggs
            uplinks = [str(ln.a if ln.a.device == device else ln.b) for ln in group]
            peers = [str(ln.b if ln.a.device == device else ln.a) for ln in group]
            tree = _ports(graph, graph.ancestors(uplinks), topology)
            tree |= set(uplinks) | set(peers) | {device}
            spread = min(1.0, (alert.evidence.get("imbalance", 1.0) - 1.0) / 2.0)
            out.append(Finding(ECMP_IMBALANCE, device, tuple(alert.ports), [alert],
                               Severity.WARNING, 0.5 + 0.5 * spread,
                               dict(alert.evidence), tree,
                               f"{device}'s flows crowd onto few of its uplinks"
                               + (" to the aggregation tier" if device in topology.spines
                                  else "")))
    for device, alerts in misconfig.items():
        ports = [str(p) for p in topology.ports(device)]
        tree = _ports(graph, graph.ancestors([device_node(device), *ports]), topology)
        tree |= set(ports) | {device}
        evidence = {k: v for a in reversed(alerts) for k, v in a.evidence.items()}
        configured = alerts[0].name == BUFFER_CONFIG_DIFF
        summary = (f"{device}'s lossless buffer thresholds are unlike its role's" if configured
                   else f"{device} pauses its neighbours with no overload behind it")
        pausing = tuple(p for a in alerts for p in a.ports)
        out.append(Finding(BUFFER_MISCONFIG, device, pausing, alerts, Severity.WARNING,
                           1.0 if configured else _confidence(alerts[0]), evidence, tree,
                           summary))
    return out


def deadlock_findings(graph: PauseGraph, topology: Topology) -> list[Finding]:
    """Cycles of the wait-for graph among ports that are all persistently stuck."""
    held = _held(graph, topology)
    out = []
    for cycle in _cycles(graph, held):
        ports = sorted(cycle)
        links = sorted({topology.entity_of(Port.parse(p)) for p in ports})
        if len(links) < 2:
            continue
        tree = _ports(graph, graph.ancestors(cycle), topology) | set(ports)
        out.append(Finding(PFC_DEADLOCK, ",".join(links), tuple(ports),
                           [held[p] for p in ports], Severity.CRITICAL, 1.0,
                           {"ports": float(len(ports)), "links": float(len(links))}, tree,
                           "a cyclic buffer dependency through " + ", ".join(links)))
    return out


def storm_stuck(evidence: dict[str, float]) -> float:
    """How stuck a storming port is, 0 to 1, from its watchdog's evidence: it pauses all the
    time and drains nothing (1), or it drains again (0)."""
    return min(1.0, evidence.get("pause_share", 1.0)) * \
        (1.0 - min(1.0, evidence.get("drain", 0.0) / 0.01))


def storm_holds(evidence: dict[str, float]) -> bool:
    """Whether a storm, by its evidence, still holds back the traffic behind it."""
    return storm_stuck(evidence) >= 0.5


def habitual(alert: Alert) -> bool:
    """A saturation the port had when monitoring started and has kept since: the workload's
    steady state, no event (:mod:`detectors.rules.egress_oversubscribed`)."""
    return alert.evidence.get("habitual", 0.0) >= 1.0


def _saturated(alert: Alert) -> bool:
    """An oversubscribed egress that still sends: one that fell idle while its symptom waits to
    clear is starved from upstream (a deadlock, a drained path), not flooded."""
    return alert.name == EGRESS_OVERSUBSCRIBED and alert.evidence.get("util", 1.0) >= SATURATED_UTIL


#: the stuck test of :mod:`detectors.rules.pfc_hold`, applied from the pausing end
_STUCK = PfcHoldOptions()


def _held(graph: PauseGraph, topology: Topology) -> dict[str, Alert]:
    """Ports persistently held in XOFF, with the symptom that says so.

    A pause is one fact seen from two ends: a port whose peer has been pausing it (``pfc_pausing``
    there, two samples at least) for most of the last interval while nothing arrived from it is
    held as surely as its own ``pfc_hold`` says, and is known to be as soon as either switch's
    samples are in (one end's telemetry can be late: an SNMP poll that lags, a collector that
    fell behind). A port a paused peer still receives from is not stuck: only its own view
    decides then."""
    index = graph.symptoms
    holds, pausing = index.named(PFC_HOLD), index.passing(PFC_PAUSING, _stuck)
    if not holds and not pausing:
        return {}
    # in the order of the graph's ports (its symptoms' first sightings), as the cycles are read
    rank = index.first_seen
    first: dict[str, Alert] = {}
    for port, a in holds:
        first.setdefault(port, a)
    out = {port: first[port] for port in sorted(first, key=rank)}
    for label, a in sorted(pausing, key=lambda pa: rank(pa[0])):
        at = topology.attached(label)
        if at is not None and at.far is not None:  # a fabric link (hosts: from their leaf)
            out.setdefault(at.far_label, a)
    return out


def _stuck(alert: Alert) -> bool:
    """Whether a ``pfc_pausing`` symptom says the port it pauses is stuck (the test of
    :data:`_STUCK`): the index applies it once per symptom
    (:meth:`~detectors.correlation.symptom_index.SymptomIndex.passing`)."""
    return not (alert.evidence.get("pause_share", 0.0) < _STUCK.min_pause_share
                or alert.evidence.get("inbound", 1.0) >= _STUCK.max_drain)


def _cycles(graph: PauseGraph, held: dict[str, Alert]) -> list[set[str]]:
    """Cycles of the wait-for graph among the ``held`` ports (two ports at least)."""
    among = set(held)
    sub = {n: graph.successors_among(n, among) for n in held}
    return [c for c in strongly_connected(sub) if len(c) >= 2]


def _ports(graph: PauseGraph, nodes: set[str], topology: Topology) -> set[str]:
    """Graph nodes as the labels symptoms carry: a host node is seen at its leaf port, a paused
    port also at the port pausing it."""
    out = set(nodes) | graph.pausers(nodes, topology)
    for node in nodes:
        if node.startswith("host:"):
            host = topology.host_by_name.get(node[5:])
            if host is not None:
                out.add(str(host.port))
    return out


def _confidence(alert: Alert) -> float:
    """From a ``strength`` in [0, 1] a detector put in its evidence (full confidence without)."""
    strength = alert.evidence.get("strength")
    if strength is None:
        return 1.0
    return 0.5 + 0.5 * max(0.0, min(1.0, strength))
