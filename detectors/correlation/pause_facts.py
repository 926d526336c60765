"""The pause facts symptoms state, and the pause graph they make, kept from step to step.

Every pause or congestion symptom states a few facts, each fixed by its name, its port and (for a
standing queue) whether the port still sends (:func:`facts_of`, the one rule of what a symptom
says about who waits for whom):

* a switch port's egress is **blocked** (paused, seen from either end of its link, or congested);
* a **pauser** port holds back the traffic of the node at the other end of its link (its
  **waiter**: the peer port, or the host), which therefore waits on the pauser's switch;
* a port held back by its host waits for the host (a **host edge**);
* a port's queue stands while it sends at line rate (**congested**: a last hop's candidate).

:class:`KeptPauseGraph` keeps the graph (:class:`~detectors.correlation.pause_graph.PauseGraph`)
those facts make across steps. A step's symptoms are mostly the very objects of the last step
(alerts are frozen; a detector makes a new one only for a port it judged), and a new object mostly
states the facts its predecessor stated: the facts are counted in as symptoms come and out as
they go, and only a fact whose count leaves or reaches zero changes the graph, and then only at
its switch. Each step still indexes its symptoms by port and by name in their order
(:attr:`PauseGraph.symptoms`, :attr:`PauseGraph.named`: the classifiers read both, the order
included). :func:`build` is a fresh keeper's first step: the graph of one set of symptoms.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from detectors.correlation.pause_graph import (
    HELD_SYMPTOMS,
    HELD_UTIL,
    PauseGraph,
    device_node,
    host_node,
)
from detectors.correlation.symptom_index import SymptomIndex
from pipeline.kinds import CONGESTED_SYMPTOMS, EGRESS_OVERSUBSCRIBED, PFC_PAUSING
from pipeline.model import Alert
from pipeline.topology.model import Topology

#: the kinds of fact (a fact is a tuple led by its kind)
BLOCKED, PAUSER, HOST_EDGE, CONGESTED = 0, 1, 2, 3
#: ``(BLOCKED, switch, port)``, ``(PAUSER, port)``, ``(HOST_EDGE, port, host node)`` or
#: ``(CONGESTED, port)``
Fact = tuple[int, str] | tuple[int, str, str]


class End(NamedTuple):
    """What a switch port label is plugged into."""

    device: str  # the port's own switch
    far: str | None  # the port at the link's other end (None: a host port)
    far_device: str | None
    host: str | None  # the host's node, on a host port

    @property
    def waiter(self) -> str | None:
        """Who waits when this port pauses: the peer port, or the host."""
        return self.far if self.far is not None else self.host


#: topology (by identity) → label → :class:`End`, and the leaves as a set
_ENDS: dict[int, tuple[Topology, dict[str, End], frozenset[str]]] = {}


def ends_of(topology: Topology) -> tuple[dict[str, End], frozenset[str]]:
    """Every switch port's :class:`End` (as :meth:`Topology.attached` says), and the leaves, once
    per topology."""
    hit = _ENDS.get(id(topology))
    if hit is not None and hit[0] is topology:
        return hit[1], hit[2]
    ends: dict[str, End] = {}
    for link in topology.links:
        a, b = link.a, link.b
        ends[str(a)] = End(a.device, str(b), b.device, None)
        ends[str(b)] = End(b.device, str(a), a.device, None)
    for host in topology.hosts:
        ends[str(host.port)] = End(host.port.device, None, None, host_node(host.name))
    if len(_ENDS) >= 4:
        _ENDS.clear()
    leaves = frozenset(topology.leaves)
    _ENDS[id(topology)] = (topology, ends, leaves)
    return ends, leaves


def facts_of(alert: Alert, ends: dict[str, End]) -> tuple[Fact, ...]:
    """The pause facts one symptom states (none for a symptom of anything else).

    A pause is one fact seen from two ends: a ``pfc_pausing`` port and the peer it pauses state
    the same pauser, and the paused port is blocked whether or not its own counters crossed the
    threshold (dialects differ: one end may time the pause while the other only counts frames)."""
    if not alert.ports:
        return ()
    port = alert.ports[0]
    name = alert.name
    if name == PFC_PAUSING:
        end = ends.get(port)
        if end is None:
            return ()
        if end.far is not None and end.far_device is not None:
            return ((BLOCKED, end.far_device, end.far), (PAUSER, port))
        return ((PAUSER, port),) if end.host is not None else ()
    if name in HELD_SYMPTOMS:
        held = True
    elif name in CONGESTED_SYMPTOMS:
        # a standing queue that does not drain is being held back, as a paused port is
        held = alert.evidence.get("util", 1.0) < HELD_UTIL
    else:
        return ()
    blocked = (BLOCKED, port.partition(":")[0], port)
    if not held:
        return (blocked, (CONGESTED, port))
    end = ends.get(port)
    if end is None:
        return (blocked,)
    if end.far is not None:
        return (blocked, (PAUSER, end.far))
    if end.host is not None:
        return (blocked, (HOST_EDGE, port, end.host))
    return (blocked,)


class KeptPauseGraph:
    """The pause graph of one topology, changed at each step by the facts that changed.

    The graph a step returns shares this keeper's tables: it is read until the next step, never
    added to (:meth:`PauseGraph.add` is for graphs made by hand)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._ends, self._leaves = ends_of(topology)
        #: the symptoms counted in, by port and name (it keeps each alive: no id is reused)
        self.symptoms = SymptomIndex()
        #: identity → the facts the symptom states
        self._stated: dict[int, tuple[Fact, ...]] = {}
        #: (name, port[, held]) → the facts a symptom of that state states (:meth:`_facts`)
        self._known: dict[tuple[str, str] | tuple[str, str, bool], tuple[Fact, ...]] = {}
        #: fact → how many of the symptoms counted in state it
        self._count: dict[Fact, int] = {}
        self._blocked: dict[str, set[str]] = {}
        self._pausers: set[str] = set()
        self._pausers_at: dict[str, set[str]] = {}
        self._congested: set[str] = set()
        #: pauser → how its waiter waits: behind the pauser's switch (its other blocked
        #: egresses) or, where it has none, on the switch as a whole (the node)
        self._waits: dict[str, tuple[bool, str, str]] = {}
        #: edges named one by one, with how many facts name each
        self._direct: dict[str, set[str]] = {}
        self._direct_rev: dict[str, set[str]] = {}
        self._direct_n: dict[tuple[str, str], int] = {}
        self._behind: dict[str, set[tuple[str, str]]] = {}
        self._waiting_at: dict[str, dict[str, set[str]]] = {}
        self._last_hops: set[tuple[str, str]] = set()

    def step(self, symptoms: Sequence[Alert]) -> PauseGraph:
        """The graph of the symptoms active now."""
        came, went = self.symptoms.step(symptoms)
        self._count_in(came, went)
        self._last_hop()
        graph = PauseGraph(direct=self._direct, symptoms=self.symptoms, blocked_at=self._blocked,
                           behind=self._behind, waiting_at=self._waiting_at)
        graph._direct_rev = self._direct_rev
        return graph

    def _facts(self, alert: Alert) -> tuple[Fact, ...]:
        """:func:`facts_of`, one tuple per name, port and (for a standing queue) held or not:
        a symptom re-issued with new evidence states the very tuple its predecessor did."""
        ports = alert.ports
        if not ports:
            return ()
        name = alert.name
        key = ((name, ports[0], alert.evidence.get("util", 1.0) < HELD_UTIL)
               if name in CONGESTED_SYMPTOMS else (name, ports[0]))
        facts = self._known.get(key)
        if facts is None:
            facts = self._known[key] = facts_of(alert, self._ends)
        return facts

    def _count_in(self, came: list[Alert], went: list[Alert]) -> None:
        """Count the facts of the symptoms that came in and out of those that went, then change
        the graph where a fact appeared or vanished."""
        stated = self._stated
        # by the facts tuple (one per symptom state, :meth:`_facts`): a symptom replaced by
        # one that states the same cancels out before any fact is counted
        moved: dict[int, tuple[tuple[Fact, ...], int]] = {}
        for alert in went:
            facts = stated.pop(id(alert))
            if facts:
                had = moved.get(id(facts))
                moved[id(facts)] = (facts, -1 if had is None else had[1] - 1)
        for alert in came:
            facts = stated[id(alert)] = self._facts(alert)
            if facts:
                had = moved.get(id(facts))
                moved[id(facts)] = (facts, 1 if had is None else had[1] + 1)
        delta: dict[Fact, int] = {}
        for facts, d in moved.values():
            if d:
                for fact in facts:
                    delta[fact] = delta.get(fact, 0) + d
        ends = self._ends
        count = self._count
        devices: set[str] = set()  # switches whose blocked set changed
        pausers: set[str] = set()  # pausers whose wait is to be read again
        for fact, d in delta.items():
            if not d:
                continue
            old = count.get(fact, 0)
            new = old + d
            if new:
                count[fact] = new
            else:
                del count[fact]
            if old and new:
                continue
            kind, port = fact[0], fact[1]
            if kind == BLOCKED:
                device, port = port, fact[2]  # type: ignore[misc]
                devices.add(device)
                if new:
                    self._blocked.setdefault(device, set()).add(port)
                else:
                    _discard(self._blocked, device, port)
            elif kind == PAUSER:
                pausers.add(port)
                device = ends[port].device
                if new:
                    self._pausers.add(port)
                    self._pausers_at.setdefault(device, set()).add(port)
                else:
                    self._pausers.discard(port)
                    _discard(self._pausers_at, device, port)
            elif kind == HOST_EDGE:
                self._link(port, fact[2], 1 if new else -1)  # type: ignore[misc]
            elif new:
                self._congested.add(port)
            else:
                self._congested.discard(port)
        for device in devices:
            pausers.update(self._pausers_at.get(device, ()))
        for pauser in pausers:
            self._rewait(pauser)

    def _rewait(self, pauser: str) -> None:
        """Read again how the waiter behind ``pauser`` waits: on every other blocked egress of
        the pauser's switch, else on the switch as a whole."""
        old = self._waits.get(pauser)
        new: tuple[bool, str, str] | None = None
        if pauser in self._pausers:
            end = self._ends[pauser]
            waiter = end.waiter
            assert waiter is not None  # a pauser has a far port or a host (facts_of)
            targets = self._blocked.get(end.device)
            if targets and (len(targets) > 1 or pauser not in targets):
                new = (True, waiter, end.device)
            else:
                new = (False, waiter, device_node(end.device))
        if new == old:
            return
        if old is not None:
            self._unwait(pauser, old)
        if new is None:
            del self._waits[pauser]
            return
        self._waits[pauser] = new
        behind, waiter, target = new
        if behind:
            self._behind.setdefault(waiter, set()).add((target, pauser))
            self._waiting_at.setdefault(target, {}).setdefault(pauser, set()).add(waiter)
        else:
            self._link(waiter, target, 1)

    def _unwait(self, pauser: str, wait: tuple[bool, str, str]) -> None:
        behind, waiter, target = wait
        if not behind:
            self._link(waiter, target, -1)
            return
        _discard(self._behind, waiter, (target, pauser))
        at = self._waiting_at[target]
        _discard(at, pauser, waiter)
        if not at:
            del self._waiting_at[target]

    def _link(self, a: str, b: str, d: int) -> None:
        """One more (``d`` = 1) or one fewer (-1) fact naming the edge ``a → b``."""
        if a == b:
            return
        key = (a, b)
        old = self._direct_n.get(key, 0)
        new = old + d
        if new:
            self._direct_n[key] = new
        else:
            del self._direct_n[key]
        if not old:
            self._direct.setdefault(a, set()).add(b)
            self._direct_rev.setdefault(b, set()).add(a)
        elif not new:
            _discard(self._direct, a, b)
            _discard(self._direct_rev, b, a)

    def _last_hop(self) -> None:
        """A link into a leaf that is saturated by its own load (not paused) carries only
        traffic for that leaf's hosts: every byte of its queue leaves through one of the leaf's
        host ports. Where some of those ports are oversubscribed too, the demand converging on
        them is what fills the link (an incast whose senders' paths meet one hop early, on the
        spine's downlink), so the link waits for them."""
        hops: set[tuple[str, str]] = set()
        oversubscribed = (self.symptoms.ports_named(EGRESS_OVERSUBSCRIBED) if self._congested
                          else set())
        if oversubscribed:
            ends, leaves = self._ends, self._leaves
            for label in self._congested:
                end = ends.get(label)
                if end is None or end.far_device is None or end.far_device not in leaves:
                    continue
                for port in oversubscribed.intersection(self.topology.host_labels(end.far_device)):
                    hops.add((label, port))
        if hops == self._last_hops:
            return
        for a, b in self._last_hops - hops:
            self._link(a, b, -1)
        for a, b in hops - self._last_hops:
            self._link(a, b, 1)
        self._last_hops = hops


def _discard(table: dict[str, set[str]] | dict[str, set[tuple[str, str]]], key: str,
             item: object) -> None:
    """``item`` out of ``table[key]``, and the key out of the table once its set is empty (a key
    is in a table only while it holds something: the walks read a key's presence)."""
    members = table[key]
    members.discard(item)
    if not members:
        del table[key]


def build(symptoms: Iterable[Alert], topology: Topology) -> PauseGraph:
    """The wait-for graph of one set of pause and congestion symptoms."""
    return KeptPauseGraph(topology).step(list(symptoms))
