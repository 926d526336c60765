"""The topology watch: the fabric's topology kept current from the devices' LLDP reports, and a
``topology_mismatch`` incident, named by the link, where it disagrees with the declared one;
fired on evidence from more than one report, resolved when the cabling is right again."""

from __future__ import annotations

from detectors.topology import SOURCE, TopologyWatch
from pipeline.kinds import TOPOLOGY_MISMATCH
from pipeline.model import Severity
from pipeline.topology.model import spine_leaf
from tests.pipeline.test_topology_discover import T0, reports_of

NS = 1_000_000_000
TOPO = spine_leaf(2, 2, 1)
L11, L22 = TOPO.link_by_id["leaf1~spine1"], TOPO.link_by_id["leaf2~spine2"]
SWAP = {L11.a: L22.b, L22.b: L11.a, L22.a: L11.b, L11.b: L22.a}


def test_a_miswire_fires_on_the_second_report_and_resolves_when_fixed() -> None:
    watch = TopologyWatch(TOPO, every_s=0)
    assert watch.observe(reports_of(TOPO, ts=T0)) == []
    assert watch.observe(reports_of(TOPO, faces=SWAP, ts=T0 + 30 * NS)) == []   # once: wait
    (fired,) = watch.observe(reports_of(TOPO, faces=SWAP, ts=T0 + 60 * NS))
    assert (fired.name, fired.entity, fired.labels) == (
        TOPOLOGY_MISMATCH, "leaf1~spine1,leaf2~spine2", {"mismatch": "miswired"})
    assert fired.root_cause and fired.severity == Severity.CRITICAL and fired.source == SOURCE
    assert fired.starts_ns == T0 + 60 * NS and set(fired.ports) == {
        str(p) for p in (L11.a, L11.b, L22.a, L22.b)}
    assert f"{L11.a} -> {L22.b}" in fired.annotations["seen"]
    assert watch.observe(reports_of(TOPO, faces=SWAP, ts=T0 + 65 * NS)) == []   # unchanged
    (resolved,) = watch.observe(reports_of(TOPO, ts=T0 + 90 * NS))
    assert resolved.fingerprint == fired.fingerprint and resolved.ends_ns == T0 + 90 * NS


def test_a_transient_that_the_next_report_clears_never_fires() -> None:
    watch = TopologyWatch(TOPO, every_s=0)
    watch.observe(reports_of(TOPO, ts=T0))
    assert watch.observe(reports_of(TOPO, faces={L11.a: None}, ts=T0 + 30 * NS)) == []
    assert watch.observe(reports_of(TOPO, ts=T0 + 60 * NS)) == []
    assert watch.book.active() == []


def test_a_dropped_neighbour_warns_on_its_link_and_a_down_link_is_not_its_business() -> None:
    watch = TopologyWatch(TOPO, every_s=0)
    for k in range(3):
        changes = watch.observe(reports_of(TOPO, faces={L22.b: None}, ts=T0 + k * 30 * NS))
    (alert,) = changes
    assert (alert.entity, alert.labels["mismatch"], alert.severity) == (
        "leaf2~spine2", "one_sided", Severity.WARNING)
    quiet = TopologyWatch(TOPO, every_s=0)
    for k in range(3):
        assert quiet.observe(reports_of(TOPO, down=[L22.a, L22.b], ts=T0 + k * 30 * NS)) == []


def test_it_judges_at_most_every_so_often_and_keeps_the_discovered_topology() -> None:
    watch = TopologyWatch(TOPO, every_s=20)
    for k in range(6):
        watch.observe(reports_of(TOPO, ts=T0 + k * 5 * NS))
    assert watch.evaluations == 2                       # at 0 s and 20 s of event time
    assert watch.discovered().topology.to_json() == TOPO.to_json()
    assert TopologyWatch(None).observe(reports_of(TOPO)) == []    # nothing declared: no judging


def test_reports_that_restate_the_same_tables_are_not_compared_again() -> None:
    """Most reports say what the last one did at a new time: the comparison is reused for them,
    and a report that says something new (a miswire after a long calm) is compared, fires on the
    second report that shows it, and resolves when the cabling is right again."""
    watch = TopologyWatch(TOPO, every_s=0)
    for k in range(5):
        assert watch.observe(reports_of(TOPO, ts=T0 + k * 30 * NS)) == []
    assert (watch.evaluations, watch.comparisons) == (5, 1)
    assert watch.observe(reports_of(TOPO, faces=SWAP, ts=T0 + 150 * NS)) == []   # once: wait
    assert watch.comparisons == 2
    (fired,) = watch.observe(reports_of(TOPO, faces=SWAP, ts=T0 + 180 * NS))
    assert fired.entity == "leaf1~spine1,leaf2~spine2" and watch.comparisons == 2
    assert watch.observe(reports_of(TOPO, faces=SWAP, ts=T0 + 185 * NS)) == []    # still on
    assert [a.entity for a in watch.book.active()] == ["leaf1~spine1,leaf2~spine2"]
    (resolved,) = watch.observe(reports_of(TOPO, ts=T0 + 240 * NS))
    assert resolved.fingerprint == fired.fingerprint and watch.comparisons == 3


def test_a_neighbour_dropped_at_both_ends_fires_on_the_second_ends_report() -> None:
    # leaf1 stops seeing spine1 in its read at 40 s, spine1 stops seeing leaf1 in its own at
    # 55 s: two devices' reports, the second newer, agree the link is gone. It fires then, as
    # "missing", without waiting for leaf1's next read at 70 s
    watch = TopologyWatch(TOPO, every_s=0)
    watch.observe(reports_of(TOPO, ts=T0))
    leaf1 = [r for r in reports_of(TOPO, faces={L11.a: None}, ts=T0 + 40 * NS)
             if r.device == "leaf1"]
    assert watch.observe(leaf1) == []
    spine1 = [r for r in reports_of(TOPO, faces={L11.a: None, L11.b: None}, ts=T0 + 55 * NS)
              if r.device == "spine1"]
    (fired,) = watch.observe(spine1)
    assert (fired.entity, fired.labels["mismatch"], fired.starts_ns) == (
        "leaf1~spine1", "missing", T0 + 55 * NS)
    # one device's first report alone is still no evidence
    alone = TopologyWatch(TOPO, every_s=0)
    alone.observe(reports_of(TOPO, ts=T0))
    assert alone.observe(leaf1) == [] and alone.book.active() == []
