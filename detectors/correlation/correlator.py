"""The fabric-wide correlator: from every detector's symptoms to one incident per root cause.

Each step it takes the symptoms active now and the topology, and

1. joins link symptoms from both ends (:mod:`detectors.correlation.links`): faulty links, flaps,
links down;
2. builds the pause graph (:mod:`detectors.correlation.pause_graph`) and classifies its roots
   (:mod:`detectors.correlation.classify`): storms, slow receivers, incasts, misconfigured buffers,
   uneven ECMP
   groups, deadlocks;
3. emits one root-cause incident per finding (``root_cause=True``), with the fingerprints of the
   symptoms it explains, its evidence and a confidence; each explained symptom is re-emitted with
   ``root_cause=False`` and ``inhibited_by`` = the incident's fingerprint, so on-call is paged for
   the cause, not for each of its echoes. Symptoms nothing explains are emitted as they are,
   except that congestion nothing explains (ports pausing, paused or queueing while no incident
   points at them) is benign load, not a fault: it is published at ``info`` severity so it stays
   visible without turning a busy fabric yellow.

A ``link_down`` that turns out to be one down episode of a flapping link is re-published, once, as
a symptom of the flap (the flap explains it), instead of standing as a second root cause.
"""

from __future__ import annotations

import numpy as np

from detectors.correlation.aftermath import Aftermath
from detectors.correlation.classify import deadlock_findings, device_findings, host_findings
from detectors.correlation.incident import Finding, to_alert
from detectors.correlation.links import LINK_SYMPTOMS, link_findings
from detectors.correlation.pause_facts import KeptPauseGraph
from detectors.features import Frame, col
from detectors.settings import CorrelatorSettings
from pipeline.kinds import (
    BUFFER_CONFIG_DIFF,
    BUFFER_MISCONFIG,
    CONGESTED_SYMPTOMS,
    ECMP_IMBALANCE,
    FAULTY_LINK,
    INCAST,
    LINK_DOWN,
    LINK_FLAP,
    PAUSE_WITHOUT_LOAD,
    PFC_DEADLOCK,
    PFC_PAUSED,
    PFC_PAUSING,
    PFC_STORM,
    SLOW_RECEIVER,
    UPLINK_IMBALANCE,
)
from pipeline.model import Alert, Severity
from pipeline.topology.model import Topology

#: a fan-in whose converging senders send less than this share of what the receiver delivers
#: leaves most of the receiver's load to senders nobody holds: weak evidence that they saturate
#: it (:meth:`Correlator._confirm_fan_ins`)
WEAK_FAN_IN = 1 / 3
#: a weak fan-in is named once it has held this many sample intervals
WEAK_FAN_IN_INTERVALS = 2

#: when two incidents explain the same symptom, the first kind here takes it
_PRECEDENCE = (PFC_DEADLOCK, PFC_STORM, LINK_DOWN, LINK_FLAP, FAULTY_LINK, BUFFER_MISCONFIG, INCAST,
               SLOW_RECEIVER, ECMP_IMBALANCE)
_DEVICE_SYMPTOMS = frozenset({PAUSE_WITHOUT_LOAD, UPLINK_IMBALANCE, BUFFER_CONFIG_DIFF})
#: symptoms of load rather than of a fault: on their own (no incident explains them) they are info
_BENIGN_ALONE = frozenset({PFC_PAUSED, PFC_PAUSING}) | CONGESTED_SYMPTOMS
#: a symptom as restated: itself, how it stands alone ("": benign, at info; None: as it is), how
#: it stands this step (the fingerprint of the incident that explains it, else as alone), and
#: the alert published for it
_Restated = tuple[Alert, str | None, str | None, Alert]


class Correlator:
    def __init__(self, topology: Topology | None, settings: CorrelatorSettings | None = None):
        self.topology = topology
        self.settings = settings or CorrelatorSettings()
        self._previous: dict[str, Alert] = {}
        #: symptom identity → how it was restated, and the copy published for it: a symptom
        #: that comes back unchanged is restated by the copy made for it last step
        #: (:meth:`_restated_symptoms`)
        self._restated: dict[int, _Restated] = {}
        #: uplink-imbalance symptoms already attributed to another incident
        self._consequences: set[str] = set()
        #: the fabric's sample interval (ns): switches sampled at different moments order two
        #: views of one event no finer than this
        self._skew_ns = 0
        #: the event time of the step being correlated
        self._now_ns = 0
        #: receivers whose incast is named, and since when a weak fan-in has held on others
        self._incasts: set[str] = set()
        self._weak_since: dict[str, int] = {}
        #: the pause graph, kept from step to step and changed by the facts that changed
        self._graph: KeptPauseGraph | None = None
        #: receivers a storm or deadlock starved, whose load comes back when it releases
        self._aftermath = Aftermath()

    def findings(self, symptoms: list[Alert]) -> list[Finding]:
        if self.topology is None:
            return []
        if self._graph is None or self._graph.topology is not self.topology:
            self._graph = KeptPauseGraph(self.topology)
        graph = self._graph.step(symptoms)
        device_symptoms = graph.symptoms.with_names(_DEVICE_SYMPTOMS)
        habits = self._aftermath.kept(graph, self._now_ns, self._skew_ns)
        found = [*link_findings(graph.symptoms.with_names(LINK_SYMPTOMS), self.topology),
                 *deadlock_findings(graph, self.topology),
                 *host_findings(graph, self.topology, habits),
                 *device_findings(graph, device_symptoms, self.topology)]
        found.sort(key=lambda f: (_rank(f.kind), f.entity))
        self._aftermath.after(found, self._now_ns)
        return self._confirm_fan_ins(self._attribute_imbalance(found))

    def _confirm_fan_ins(self, found: list[Finding]) -> list[Finding]:
        """Incasts, with the weak ones named only once they have held.

        A step's pause graph joins switches sampled at different moments of the interval, so
        while congestion spreads (a storm's pause tree reaching further, a true incast whose
        senders are not all seen held yet) it can show held senders leading to a saturated
        receiver they do not feed. When those converging senders send less than
        :data:`WEAK_FAN_IN` of what the receiver delivers, the rest of its load comes from
        senders nobody holds, and the fan-in is only named once it has held for
        :data:`WEAK_FAN_IN_INTERVALS` sample intervals: every switch has then reported twice
        with it in view. A fan-in that carries most of the receiver is named at once, and a
        named incast stays named while its finding lasts."""
        kept: list[Finding] = []
        named: set[str] = set()
        weak: dict[str, int] = {}
        for f in found:
            if f.kind == INCAST and f.entity not in self._incasts:
                share = 1.0 / max(f.evidence.get("concentration", 1.0), 1e-9)
                if share < WEAK_FAN_IN:
                    since = weak[f.entity] = self._weak_since.get(f.entity, self._now_ns)
                    if self._now_ns - since < WEAK_FAN_IN_INTERVALS * self._skew_ns:
                        continue
            if f.kind == INCAST:
                named.add(f.entity)
            kept.append(f)
        self._incasts, self._weak_since = named, weak
        return kept

    def _attribute_imbalance(self, found: list[Finding]) -> list[Finding]:
        """An uplink imbalance that began while another incident that can move or hold back this
        leaf's uplink traffic was on is that incident's consequence, not a hash collision:

        * a fabric link down or flapping anywhere re-hashes flows onto the survivors, at the
          leaf itself or at a spine that lost its way down (remote capacity loss, anchors §6 #13);
        * congestion (a storm, an incast, a slow receiver, a deadlock, a misconfigured buffer)
          throttles some of the leaf's flows and not others only once its pause tree reaches the
          leaf's uplinks or the spine ports facing them.

        Anything else (a corrupting link, congestion elsewhere in the fabric) cannot shift this
        leaf's shares, and does not hide a collision that happens while it lasts. "Began while"
        is judged to within one sample interval: the switches that see the event and the leaf
        that sees its imbalance are sampled at different moments. It is attached to the earliest
        such incident instead of standing as a root cause, and stays a consequence for as long as
        its symptom lasts, even after the cause has resolved (the symptom's own hysteresis
        outlives the cause by a few samples).

        So an imbalance nothing explains yet stands as a root cause only once a cause that began
        "while" would have been named: one interval for the cause to begin after it (a link down
        on an SNMP fabric whose ends were polled after the leaf) and one more for the cause's
        own evidence (a port is down once a second sample says so), two intervals from the
        imbalance's onset in all. Naming it sooner paged for a collision that was a link's
        consequence. With the imbalance's own two samples, a collision is named one interval
        after its symptom fires; the symptom itself is published meanwhile."""
        def onset(f: Finding) -> int:
            return min((a.starts_ns for a in f.defining), default=0)

        others = [f for f in found if f.kind != ECMP_IMBALANCE]
        kept = []
        active: set[str] = set()
        for f in found:
            if f.kind == ECMP_IMBALANCE:
                marks = {a.fingerprint for a in f.defining}
                active |= marks
                reach = self._uplink_reach(f.entity)
                prior = [g for g in others if onset(g) <= onset(f) + self._skew_ns
                         and _can_shift(g, reach, self.topology)]
                if prior:
                    cause = min(prior, key=onset)
                    cause.explains_at |= f.explains_at | {f.entity}
                    self._consequences |= marks
                    continue
                if marks & self._consequences:
                    continue
                if self._now_ns < onset(f) + 2 * self._skew_ns:
                    continue  # a cause that began "while" may not be named yet
            kept.append(f)
        self._consequences &= active
        return kept

    def _uplink_reach(self, switch: str) -> set[str]:
        """A switch's uplink ports (a leaf's to its spines, a spine's to the aggregation tier)
        and the ports facing them."""
        topo = self.topology
        if topo is None:
            return set()
        out: set[str] = set()
        for link in topo.up_links(switch):
            out |= {str(link.a), str(link.b)}
        return out

    def correlate(self, symptoms: list[Alert], frame: Frame) -> list[Alert]:
        """Incidents and (annotated) symptoms, as active now."""
        return self.correlate_at(symptoms, frame.now_ns, sample_interval_ns(frame))

    def correlate_at(self, symptoms: list[Alert], now: int, interval_ns: int) -> list[Alert]:
        """:meth:`correlate` given the event time and the fabric's sample interval (ns) rather
        than a frame: what a correlator fed by other processes' symptoms knows
        (:mod:`detectors.partition`)."""
        self._skew_ns, self._now_ns = interval_ns, now
        found = self.findings(symptoms)
        at = _where(symptoms) if found else {}
        owner: dict[str, Alert] = {}  # symptom fingerprint → the incident that explains it
        incidents: list[Alert] = []
        for finding in found:
            hits: set[int] = set()
            for key in finding.explains_at:
                hits.update(at.get(key, ()))
            explained = [symptoms[i] for i in sorted(hits)
                         if symptoms[i].fingerprint not in owner]
            incident = to_alert(finding, explained, now)
            incidents.append(incident)
            for s in explained:
                owner[s.fingerprint] = incident
        out = list(incidents)
        out.extend(self._demoted(incidents, now))
        if self.settings.publish_symptoms:
            out.extend(self._restated_symptoms(symptoms, owner))
        self._previous = {a.fingerprint: a for a in incidents}
        return out

    def _restated_symptoms(self, symptoms: list[Alert], owner: dict[str, Alert]) -> list[Alert]:
        """Each symptom as published: inhibited by the incident that explains it (``owner``, by
        fingerprint), at ``info`` when it is benign and nothing explains it, else as it is. A
        symptom that comes back as the very same object (alerts are frozen), restated the same
        way, is published as the copy made for it last step: a storm's thousands of inhibited
        symptoms otherwise cost a copy each, every step; and while no incident explains anything,
        a symptom seen last step is not read at all (how it stands alone is kept with it)."""
        last = self._restated
        restated: dict[int, _Restated] = {}
        out: list[Alert] = []
        for s in symptoms:
            key = id(s)
            hit = last.get(key)  # the same object: ``last`` keeps it alive, so its id is its own
            alone = ("" if s.name in _BENIGN_ALONE else None) if hit is None else hit[1]
            how = alone
            if owner:
                cause = owner.get(s.fingerprint)
                if cause is not None:
                    how = cause.fingerprint
            if hit is None or hit[2] != how:
                hit = (s, alone, how, s if how is None else s.replace(inhibited_by=how) if how
                       else s.replace(severity=Severity.INFO))
            restated[key] = hit
            out.append(hit[3])
        self._restated = restated
        return out

    def _demoted(self, incidents: list[Alert], now: int) -> list[Alert]:
        """A link_down of the last step whose link now flaps becomes a symptom of the flap."""
        flaps = {a.entity: a for a in incidents if a.name == LINK_FLAP}
        current = {a.fingerprint for a in incidents}
        out = []
        for fp, prev in self._previous.items():
            if fp in current or prev.name != LINK_DOWN or prev.entity not in flaps:
                continue
            flap = flaps[prev.entity]
            out.append(prev.model_copy(update={
                "root_cause": False, "inhibited_by": flap.fingerprint, "explains": (),
                "updated_ns": now}))
        return out


#: incidents that take capacity away from the fabric's paths (flows re-hash around them)
_RE_ROUTING = frozenset({LINK_DOWN, LINK_FLAP})
#: incidents that hold back the traffic in their pause tree
_CONGESTING = frozenset({PFC_STORM, PFC_DEADLOCK, INCAST, SLOW_RECEIVER, BUFFER_MISCONFIG})


def _can_shift(cause: Finding, uplinks: set[str], topology: Topology | None) -> bool:
    """Whether ``cause`` can move traffic among the uplinks ``uplinks`` (a leaf's, and the ports
    facing them): a fabric link lost anywhere, or congestion whose tree reaches them."""
    if cause.kind in _RE_ROUTING:
        return topology is not None and cause.entity in topology.link_by_id
    if cause.kind in _CONGESTING:
        return bool(cause.explains_at & uplinks)
    return False


def _where(symptoms: list[Alert]) -> dict[str, list[int]]:
    """Port label or entity → the positions of the symptoms on it: an incident explains the
    symptoms on its tree's ports and entities, found by looking each of those up instead of
    testing every symptom of the fabric against every incident."""
    out: dict[str, list[int]] = {}
    for i, s in enumerate(symptoms):
        for key in {*s.ports, s.entity}:
            out.setdefault(key, []).append(i)
    return out


def _rank(kind: str) -> int:
    return _PRECEDENCE.index(kind) if kind in _PRECEDENCE else len(_PRECEDENCE)


def sample_interval_ns(frame: Frame) -> int:
    """The typical time between a port's samples (0 before any rate exists)."""
    dt = frame.table.dt[:, col("if_out_octets")] if frame.table.n_ports else np.empty(0)
    dt = dt[np.isfinite(dt)]
    return int(float(np.median(dt)) * 1e9) if dt.size else 0
