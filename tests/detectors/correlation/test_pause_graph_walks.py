"""The pause graph's walks (descendants, ancestors, roots, cycles among a subset) on random
symptom sets of a three-tier fabric agree with a plain breadth-first walk of every edge spelt
out: the graph keeps a switch's edges as one fact (its blocked egresses but the pausing port)
and reads each switch's blocked set at most twice per walk, and that shortcut must change no
answer."""

from __future__ import annotations

import random
from collections.abc import Iterable

from detectors.correlation.pause_facts import build
from detectors.correlation.pause_graph import PauseGraph, strongly_connected
from pipeline.model import Alert
from pipeline.topology.model import Topology
from pipeline.topology.shape import FabricShape
from tests.detectors.correlation.test_correlator import sym

TOPO = FabricShape(3, 3, 3, zones=2, aggs=2).build()
NAMES = ("pfc_paused", "pfc_pausing", "pfc_watchdog", "queue_buildup", "queue_buildup",
         "egress_oversubscribed", "host_slow_drain", "pfc_hold")


def random_symptoms(rng: random.Random, topo: Topology, n: int) -> list[Alert]:
    ports = sorted({str(p) for d in topo.switches for p in topo.ports(d)})
    out = []
    for label in rng.sample(ports, min(n, len(ports))):
        name = rng.choice(NAMES)
        out.append(sym(name, label, util=rng.choice((0.2, 0.9, 1.0)),
                       pause_share=rng.random(), inbound=rng.random() * 0.02))
    return out


def closure(edges: dict[str, set[str]], start: Iterable[str]) -> set[str]:
    seen = set(start)
    stack = list(seen)
    while stack:
        for nxt in edges.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def reversed_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    rev: dict[str, set[str]] = {}
    for a, targets in edges.items():
        for b in targets:
            rev.setdefault(b, set()).add(a)
    return rev


def check(graph: PauseGraph, rng: random.Random) -> None:
    edges = graph.edges
    rev = reversed_edges(edges)
    nodes = sorted(set(edges) | set(rev))
    waited = {t for ts in edges.values() for t in ts}
    assert graph.roots() == {n for n in waited if not edges.get(n)}
    for node in rng.sample(nodes, min(12, len(nodes))):
        assert graph.descendants(node) == closure(edges, [node])
    for _ in range(6):
        start = rng.sample(nodes, min(rng.randint(1, 4), len(nodes)))
        assert graph.ancestors(start) == closure(rev, start)
    among = set(rng.sample(nodes, min(len(nodes) // 3, len(nodes))))
    sub = {n: graph.successors_among(n, among) for n in among}
    assert sub == {n: edges.get(n, set()) & among for n in among}
    assert sorted(map(sorted, strongly_connected(sub))) == sorted(
        map(sorted, strongly_connected({n: edges.get(n, set()) & among for n in among})))


def test_walks_agree_with_a_plain_walk_of_every_edge_on_random_symptom_sets():
    rng = random.Random(20261206)
    walked = 0
    for _ in range(150):
        graph = build(random_symptoms(rng, TOPO, rng.randint(3, 90)), TOPO)
        if not graph.behind:
            continue
        check(graph, rng)
        walked += 1
    assert walked > 100  # the sets made pause edges behind switches to walk


def test_a_switch_whose_every_port_is_blocked_keeps_one_fact_per_waiter_not_one_edge_per_port():
    # every spine port paused from its far end and congested: each spine holds n waiters and n
    # blocked egresses, n*(n-1) edges when spelt out
    spine = "z1-spine1"
    symptoms = [sym("queue_buildup", str(p), util=0.9) for p in TOPO.ports(spine)]
    symptoms += [sym("pfc_pausing", str(p), throttle=0.5) for p in TOPO.ports(spine)]
    graph = build(symptoms, TOPO)
    n = len(TOPO.ports(spine))
    waiters = [w for w, behind in graph.behind.items() if any(d == spine for d, _ in behind)]
    assert len(waiters) == n
    assert all(len(graph.successors(w)) == n - 1 for w in waiters)
    assert sum(len(graph.behind[w]) for w in waiters) == n
