"""The pause graph: who waits for whom, built from pause and congestion symptoms and the topology.

A node is a switch port (``leaf3:Ethernet4``, standing for that port's egress queue), a host
(``host:host12``) or a switch as a whole (``device:leaf3``). An edge ``A → B`` reads "A's egress is
held back because of B" (Hawkeye's wait-for edge, from counters instead of INT):

* a port paused by its peer (``pfc_watchdog``/``pfc_paused`` on it, or ``pfc_pausing`` on the peer
  port) waits for the peer: for a host, the host itself; for a switch, that switch's blocked egress
  ports (paused or congested), except the one on the same link — up-down routing never sends a
  packet back out of the link it came in on, so a pause can only be caused by another egress;
* a switch that pauses with no blocked egress to show for it is itself the reason (``device:``);
* a port with a standing queue (ECN marking) that sends well below line rate is held back by its
  peer even when its pause counters say little (frames and timers are sampled; a backlog that does
  not drain on a lossless priority can only be paused).

The roots are nodes that wait for no one. A strongly connected set of ports is a cyclic buffer
dependency: a PFC deadlock (Hu et al., HotNets'16) when its ports are stuck. Up-down routing
cannot close such a cycle (no packet turns back down and up again), so in a healthy Clos one only
appears through bounce paths after failures or misrouting.

This module holds the graph and its walks; what each symptom states, and the graph built from it
(once, or kept from step to step), is :mod:`detectors.correlation.pause_facts`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from detectors.correlation.symptom_index import SymptomIndex
from pipeline.kinds import HOST_SLOW_DRAIN, PAUSED_SYMPTOMS, PFC_PAUSING
from pipeline.topology.model import Topology

#: a port with a standing queue that sends less than this share of line rate is held back by its
#: peer, whatever its pause counters say: on a lossless priority nothing else idles a backlog
HELD_UTIL = 0.5
#: symptoms that say a port is held back by its peer (a host that drains slowly holds its port)
HELD_SYMPTOMS = PAUSED_SYMPTOMS | {HOST_SLOW_DRAIN}


def host_node(name: str) -> str:
    return f"host:{name}"


def device_node(name: str) -> str:
    return f"device:{name}"


@dataclass
class PauseGraph:
    """Who waits for whom. A paused port waits on every other blocked egress of the switch that
    pauses it; those edges are kept as that one fact, ``(switch, pausing port)``, instead of one
    edge per blocked port: a switch with ``n`` paused ports and ``n`` blocked egresses has ``n²``
    edges, and an aggregation switch's ``n`` grows with the zones it joins, so spelling them out
    made each step's graph grow with the square of the fabric's width. Every walk below reads a
    switch's blocked set at most twice per walk (once with the first pauser left out, once for
    that pauser), so a walk is linear in the symptoms."""

    #: edges named one by one (to a host, to a switch as a whole, a saturated link's last hop)
    direct: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    #: the symptoms the graph is made of, by port and by name, in the order they came
    #: (``symptoms.on(port)``, ``symptoms.named(name)``): the classifiers look for a few names
    #: among thousands of symptoms
    symptoms: SymptomIndex = field(default_factory=SymptomIndex)
    #: switch → its egress ports that are held back (paused, seen from either end, or congested)
    blocked_at: dict[str, set[str]] = field(default_factory=dict)
    #: waiter → the (switch, pausing port) it waits behind: it waits on every blocked egress of
    #: that switch but the pausing port (up-down routing never sends a packet back out of the
    #: link it came in on)
    behind: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))
    #: switch → pausing port → the waiters behind it (``behind`` read the other way)
    waiting_at: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set)))
    _direct_rev: dict[str, set[str]] | None = field(default=None, repr=False, compare=False)

    def is_blocked(self, port: str) -> bool:
        """Whether a port's egress is paused or congested (it can explain its switch pausing)."""
        return port in self.blocked_at.get(port.partition(":")[0], ())

    def add(self, a: str, b: str) -> None:
        """An edge named on its own: ``a`` waits for ``b``."""
        if a != b:
            self.direct[a].add(b)
            self._direct_rev = None

    def wait_behind(self, waiter: str, device: str, pauser: str) -> None:
        """``waiter`` waits on every blocked egress of ``device`` but ``pauser`` (which must
        leave at least one: else it waits on the device as a whole,
        :mod:`detectors.correlation.pause_facts`)."""
        self.behind[waiter].add((device, pauser))
        self.waiting_at[device][pauser].add(waiter)

    def successors(self, node: str) -> set[str]:
        """The nodes ``node`` waits for directly."""
        out = set(self.direct.get(node, ()))
        for device, pauser in self.behind.get(node, ()):
            out |= self.blocked_at[device]
            out.discard(pauser)
        out.discard(node)
        return out

    def successors_among(self, node: str, among: set[str]) -> set[str]:
        """:meth:`successors` that are in ``among``, at the cost of the smaller of the two."""
        out = self.direct.get(node, set()) & among
        for device, pauser in self.behind.get(node, ()):
            targets = self.blocked_at[device]
            out |= {t for t in among if t in targets} if len(among) < len(targets) \
                else targets & among
            out.discard(pauser)
        out.discard(node)
        return out

    @property
    def edges(self) -> dict[str, set[str]]:
        """Every edge spelt out, node → the nodes it waits for: for reading a small graph (a
        test, a dump), at the cost of the ``n²`` the class exists to avoid."""
        return {n: out for n in set(self.direct) | set(self.behind)
                if (out := self.successors(n))}

    def roots(self) -> set[str]:
        """Nodes that are waited on but wait for no one."""
        waited = {t for targets in self.direct.values() for t in targets}
        for device, by_pauser in self.waiting_at.items():
            targets = self.blocked_at[device]
            pausers = [p for p, waiters in by_pauser.items() if waiters]
            waited |= targets if len(pausers) > 1 else targets - set(pausers)
        return {n for n in waited if not self.direct.get(n) and not self.behind.get(n)}

    def _waiters_direct(self) -> dict[str, set[str]]:
        if self._direct_rev is None:
            rev: dict[str, set[str]] = defaultdict(set)
            for a, targets in self.direct.items():
                for b in targets:
                    rev[b].add(a)
            self._direct_rev = rev
        return self._direct_rev

    def descendants(self, node: str) -> set[str]:
        """Every node ``node`` waits for, directly or through others."""
        seen = {node}
        stack = [node]
        opened: dict[str, str | None] = {}  # switch → the pauser left out, None: all taken

        def push(n: str) -> None:
            if n not in seen:
                seen.add(n)
                stack.append(n)

        while stack:
            here = stack.pop()
            for down in self.direct.get(here, ()):
                push(down)
            for device, pauser in self.behind.get(here, ()):
                targets = self.blocked_at[device]
                if device not in opened:
                    for t in targets:
                        if t != pauser:
                            push(t)
                    opened[device] = pauser if pauser in targets else None
                elif (left := opened[device]) is not None and left != pauser:
                    push(left)
                    opened[device] = None
        return seen

    def ancestors(self, nodes: Iterable[str]) -> set[str]:
        """Every node whose wait leads to any of ``nodes`` (themselves included)."""
        rev = self._waiters_direct()
        seen = set(nodes)
        stack = list(seen)
        opened: dict[str, str | None] = {}  # switch → the pauser whose waiters are left out

        def push_all(ns: Iterable[str]) -> None:
            for n in ns:
                if n not in seen:
                    seen.add(n)
                    stack.append(n)

        while stack:
            here = stack.pop()
            push_all(rev.get(here, ()))
            device = here.partition(":")[0]
            by_pauser = self.waiting_at.get(device)
            if by_pauser is None or here not in self.blocked_at[device]:
                continue
            if device not in opened:
                for pauser, waiters in by_pauser.items():
                    if pauser != here:
                        push_all(waiters)
                opened[device] = here if here in by_pauser else None
            elif (left := opened[device]) is not None and left != here:
                push_all(by_pauser[left])
                opened[device] = None
        return seen

    def pausers(self, ports: Iterable[str], topology: Topology) -> set[str]:
        """The ports that pause any of ``ports`` from the other end of their link (``pfc_pausing``
        there): the same pause edge seen from the sender of the pause, so a tree that holds the
        paused port holds the pausing one too, at every tier."""
        out = set()
        for label in ports:
            if label.startswith(("host:", "device:")):
                continue
            at = topology.attached(label)
            if at is not None and at.far is not None and any(
                    a.name == PFC_PAUSING for a in self.symptoms.on(at.far_label)):
                out.add(at.far_label)
        return out

    def cycles(self) -> list[set[str]]:
        """Strongly connected sets of two or more nodes: every member waits, through the others,
        on itself."""
        return [comp for comp in strongly_connected(self.edges) if len(comp) >= 2]


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on long pause chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = 0
    for start in list(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.add(top)
                    if top == node:
                        break
                out.append(comp)
    return out
