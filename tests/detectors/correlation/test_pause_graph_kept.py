"""The pause graph kept from step to step (:class:`KeptPauseGraph`: facts counted in and out as
symptoms come and go) is, at every step, the graph built afresh from that step's symptoms; and its
index of the symptoms (:class:`SymptomIndex`) reads them by port and by name in the order of that
step's list, however the list changed: symptoms re-issued with new evidence (a standing queue that
starts or stops draining), cleared, fired, moved in the list, on several priorities of one port."""

from __future__ import annotations

import random

from detectors.correlation.classify import _stuck
from detectors.correlation.pause_facts import KeptPauseGraph, build
from detectors.correlation.pause_graph import PauseGraph
from pipeline.kinds import PFC_PAUSING
from pipeline.model import Alert
from tests.detectors.correlation.test_pause_graph_build import by_port, with_repeats
from tests.detectors.correlation.test_pause_graph_walks import TOPO


def next_step(rng: random.Random, symptoms: list[Alert]) -> list[Alert]:
    """The next step's symptoms: most kept as they are, some re-issued with new evidence, some
    gone, some new, and now and then the list reordered."""
    out = []
    for a in symptoms:
        roll = rng.random()
        if roll < 0.1:
            continue
        out.append(a if roll >= 0.4 else a.replace(
            evidence={"util": rng.choice((0.2, 0.9)), "pause_share": rng.random(),
                      "inbound": rng.random() * 0.02},
            updated_ns=a.updated_ns + 1))
    fresh = with_repeats(rng, rng.randint(0, 12))
    for a in fresh:
        out.insert(rng.randrange(len(out) + 1), a)
    if rng.random() < 0.2:
        rng.shuffle(out)
    return out


def same_graph(kept: PauseGraph, fresh: PauseGraph) -> None:
    assert kept.edges == fresh.edges
    assert kept.blocked_at == fresh.blocked_at
    assert kept.direct == fresh.direct
    assert kept.behind == fresh.behind
    assert kept.waiting_at == fresh.waiting_at
    assert kept.roots() == fresh.roots()


def same_reads(graph: PauseGraph, symptoms: list[Alert]) -> None:
    index = graph.symptoms
    ports = by_port(symptoms)
    assert sorted(ports, key=index.first_seen) == list(ports)
    for port, alerts in ports.items():
        assert index.on(port) == alerts
    for name in {a.name for a in symptoms}:
        assert index.named(name) == [(a.ports[0], a) for a in symptoms
                                     if a.ports and a.name == name]
        assert index.ports_named(name) == {a.ports[0] for a in symptoms
                                           if a.ports and a.name == name}
    assert index.passing(PFC_PAUSING, _stuck) == [
        (a.ports[0], a) for a in symptoms if a.ports and a.name == PFC_PAUSING and _stuck(a)]
    names = ("pause_without_load", "queue_buildup")
    assert index.with_names(names) == [a for a in symptoms if a.name in names]


def test_the_kept_graph_is_the_graph_built_afresh_at_every_step() -> None:
    rng = random.Random(20261207)
    for _ in range(40):
        kept = KeptPauseGraph(TOPO)
        symptoms = with_repeats(rng, rng.randint(1, 60))
        for _ in range(12):
            graph = kept.step(symptoms)
            same_graph(graph, build(symptoms, TOPO))
            same_reads(graph, symptoms)
            symptoms = next_step(rng, symptoms)
        graph = kept.step([])
        assert not graph.edges and not graph.blocked_at and not graph.direct
        assert not graph.behind and not graph.waiting_at
