""":func:`build` (one pass over the symptoms, each pause fact taken once by the port that sends
the pause, far ends read from a table made once per topology) gives the graph its definition
spells out edge by edge, on random symptom sets of a three-tier fabric; and the classifiers'
reads of its symptoms by port and by name
(:class:`~detectors.correlation.symptom_index.SymptomIndex`) find what a scan of every symptom
finds, in the same order."""

from __future__ import annotations

import random
from collections import defaultdict

from detectors.correlation.classify import _held
from detectors.correlation.pause_facts import build
from detectors.correlation.pause_graph import HELD_UTIL, device_node, host_node
from detectors.rules.pfc_hold import PfcHoldOptions
from pipeline.kinds import (
    CONGESTED_SYMPTOMS,
    EGRESS_OVERSUBSCRIBED,
    HOST_SLOW_DRAIN,
    PAUSED_SYMPTOMS,
    PFC_HOLD,
    PFC_PAUSING,
)
from pipeline.model import Alert
from pipeline.topology.model import Host, Topology
from tests.detectors.correlation.test_correlator import sym
from tests.detectors.correlation.test_pause_graph_walks import TOPO, random_symptoms


def spelt_out(symptoms: list[Alert], topo: Topology) -> tuple[dict[str, set[str]],
                                                               dict[str, set[str]]]:
    """Every edge of the pause graph and every switch's blocked egresses, straight from the
    module's definition: one edge per waiter and blocked port, each pause seen from both ends."""
    paused: set[str] = set()
    pausing: set[str] = set()
    congested: set[str] = set()
    flooded: set[str] = set()
    blocked: dict[str, set[str]] = defaultdict(set)
    for a in symptoms:
        if not a.ports:
            continue
        port = a.ports[0]
        device = port.partition(":")[0]
        if a.name in PAUSED_SYMPTOMS or a.name == HOST_SLOW_DRAIN:
            paused.add(port)
            blocked[device].add(port)
        elif a.name in CONGESTED_SYMPTOMS:
            blocked[device].add(port)
            (paused if a.evidence.get("util", 1.0) < HELD_UTIL else congested).add(port)
        elif a.name == PFC_PAUSING:
            pausing.add(port)
        if a.name == EGRESS_OVERSUBSCRIBED:
            flooded.add(port)
    for label in pausing:
        at = topo.attached(label)
        if at is not None and at.far is not None:
            blocked[at.far.device].add(at.far_label)
    edges: dict[str, set[str]] = defaultdict(set)

    def waits(waiter: str, device: str, pauser: str) -> None:
        others = blocked.get(device, set()) - {pauser}
        edges[waiter] |= others or {device_node(device)}

    for label in paused:
        at = topo.attached(label)
        if at is not None and at.far is not None:
            waits(label, at.far.device, at.far_label)
        elif at is not None and isinstance(at.what, Host):
            edges[label].add(host_node(at.what.name))
    for label in pausing:
        at = topo.attached(label)
        device = label.partition(":")[0]
        if at is not None and at.far is not None:
            waits(at.far_label, device, label)
        elif at is not None and isinstance(at.what, Host):
            waits(host_node(at.what.name), device, label)
    for label in congested if flooded else ():
        at = topo.attached(label)
        if at is not None and at.far is not None and at.far.device in topo.leaves:
            edges[label] |= flooded & topo.host_labels(at.far.device)
    return ({n: out - {n} for n, out in edges.items() if out - {n}},
            {d: ports for d, ports in blocked.items()})


def by_port(symptoms: list[Alert]) -> dict[str, list[Alert]]:
    """Port → its symptoms, ports in the order first seen, symptoms in the order they came."""
    out: dict[str, list[Alert]] = defaultdict(list)
    for a in symptoms:
        if a.ports:
            out[a.ports[0]].append(a)
    return out


def held_by_scan(symptoms: list[Alert], topo: Topology) -> dict[str, Alert]:
    """:func:`classify._held` as a scan of every symptom."""
    stuck = PfcHoldOptions()
    ports = by_port(symptoms)
    out = {port: next(a for a in alerts if a.name == PFC_HOLD)
           for port, alerts in ports.items() if any(a.name == PFC_HOLD for a in alerts)}
    for label, alerts in ports.items():
        for a in alerts:
            if a.name != PFC_PAUSING or a.evidence.get("pause_share", 0.0) < \
                    stuck.min_pause_share or a.evidence.get("inbound", 1.0) >= stuck.max_drain:
                continue
            at = topo.attached(label)
            if at is not None and at.far is not None:
                out.setdefault(at.far_label, a)
    return out


def with_repeats(rng: random.Random, n: int) -> list[Alert]:
    """Random symptoms, some ports with several (as a port paused on two priorities is)."""
    out = random_symptoms(rng, TOPO, n)
    for a in rng.sample(out, len(out) // 3):
        out.insert(rng.randrange(len(out) + 1), sym(
            rng.choice((PFC_PAUSING, PFC_HOLD, "egress_oversubscribed", "queue_buildup")),
            a.ports[0], util=rng.choice((0.2, 0.9)), pause_share=rng.random(),
            inbound=rng.random() * 0.02))
    out.append(Alert(name="pause_without_load", entity="z1-leaf1", starts_ns=1, updated_ns=1))
    return out


def test_build_gives_the_graph_its_definition_spells_out() -> None:
    rng = random.Random(20261207)
    busy = 0
    for _ in range(200):
        symptoms = with_repeats(rng, rng.randint(1, 120))
        graph = build(symptoms, TOPO)
        edges, blocked = spelt_out(symptoms, TOPO)
        assert graph.edges == edges
        assert graph.blocked_at == blocked
        ports = by_port(symptoms)
        assert sorted(ports, key=graph.symptoms.first_seen) == list(ports)
        for port, alerts in ports.items():
            assert graph.symptoms.on(port) == alerts
        for name in {a.name for a in symptoms}:
            assert graph.symptoms.named(name) == [(a.ports[0], a) for a in symptoms
                                                  if a.ports and a.name == name]
            assert graph.symptoms.with_names([name]) == [a for a in symptoms if a.name == name]
        busy += bool(graph.behind)
    assert busy > 150


def test_held_ports_are_those_a_scan_of_every_symptom_finds_in_its_order() -> None:
    rng = random.Random(7)
    found = 0
    for _ in range(200):
        symptoms = with_repeats(rng, rng.randint(1, 120))
        graph = build(symptoms, TOPO)
        want = held_by_scan(symptoms, TOPO)
        got = _held(graph, TOPO)
        assert list(got.items()) == list(want.items())
        found += len(got) > 2
    assert found > 50
