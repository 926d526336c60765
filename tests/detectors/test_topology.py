"""The topology watch: the fabric's topology kept current from the devices' LLDP reports, and a
``topology_mismatch`` incident, named by the link, where it disagrees with the declared one;
fired once the reports that show it have shown it for two sample intervals (a streamed table
holds until its device's next report, a periodic one is a snapshot), resolved when the cabling
is right again."""

from __future__ import annotations

from detectors.topology import SOURCE, TopologyWatch
from pipeline.kinds import TOPOLOGY_MISMATCH
from pipeline.model import Severity
from pipeline.topology.model import Port, spine_leaf
from pipeline.topology.neighbors import NeighborReport
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


def test_it_compares_at_most_every_so_often_and_keeps_the_discovered_topology() -> None:
    watch = TopologyWatch(TOPO, every_s=20)
    for k in range(6):     # a table that changes at every report
        faces: dict[Port, Port | None] | None = {L22.b: None} if k % 2 else None
        watch.observe(reports_of(TOPO, faces=faces, ts=T0 + k * 5 * NS))
    assert (watch.evaluations, watch.comparisons) == (6, 2)    # at 0 s and 20 s of event time
    watch.observe(reports_of(TOPO, ts=T0 + 40 * NS))
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


def _streamed(reports: list[NeighborReport]) -> list[NeighborReport]:
    return [r.model_copy(update={"streamed": True}) for r in reports]


def _of(device: str, reports: list[NeighborReport]) -> list[NeighborReport]:
    return [r for r in reports if r.device == device]


def test_a_streamed_drop_fires_two_intervals_after_it_as_the_samples_move_time_on() -> None:
    """An ON_CHANGE report comes once, when the table changes: no second report confirms it.
    Its table holds until the device's next report, so the samples' event time is the
    evidence: the drop fires once it held two sample intervals, with no report since."""
    watch = TopologyWatch(TOPO)
    assert watch.observe(_streamed(reports_of(TOPO, ts=T0)), T0, NS) == []
    drop = _of("leaf2", _streamed(reports_of(TOPO, faces={L22.a: None}, ts=T0 + 10 * NS)))
    assert watch.observe(drop, T0 + 10 * NS, NS) == []
    assert watch.observe([], T0 + 11 * NS, NS) == []
    assert watch.observe([], T0 + 11_900_000_000, NS) == []
    (fired,) = watch.observe([], T0 + 12 * NS, NS)
    assert (fired.entity, fired.labels["mismatch"], fired.starts_ns) == (
        "leaf2~spine2", "one_sided", T0 + 12 * NS)
    assert watch.observe([], T0 + 13 * NS, NS) == []            # still firing, nothing new
    back = _of("leaf2", _streamed(reports_of(TOPO, ts=T0 + 20 * NS)))
    (resolved,) = watch.observe(back, T0 + 20 * NS, NS)
    assert resolved.fingerprint == fired.fingerprint and resolved.ends_ns == T0 + 20 * NS


def test_a_streamed_blip_shorter_than_the_hold_never_pages() -> None:
    """A neighbour gone for a second and back (a port coming up before its first LLDPDU
    arrived) is shown by one report and cleared by the next: it never fires, however long
    the samples run on after it; the hold is counted in the samples' own interval."""
    watch = TopologyWatch(TOPO)
    watch.observe(_streamed(reports_of(TOPO, ts=T0)), T0, NS)
    gone = _of("leaf2", _streamed(reports_of(TOPO, faces={L22.a: None}, ts=T0 + 10 * NS)))
    assert watch.observe(gone, T0 + 10 * NS, NS) == []
    back = _of("leaf2", _streamed(reports_of(TOPO, ts=T0 + 11_500_000_000)))
    assert watch.observe(back, T0 + 11_500_000_000, NS) == []
    for k in range(12, 40):
        assert watch.observe([], T0 + k * NS, NS) == []
    assert watch.book.active() == [] and watch.mismatches == []
    slow = TopologyWatch(TOPO)      # 10 s samples: two intervals are 20 s
    slow.observe(_streamed(reports_of(TOPO, ts=T0)), T0, 10 * NS)
    slow.observe(gone, T0 + 10 * NS, 10 * NS)
    assert slow.observe([], T0 + 20 * NS, 10 * NS) == []
    (fired,) = slow.observe([], T0 + 30 * NS, 10 * NS)
    assert fired.entity == "leaf2~spine2"


def test_a_change_waiting_for_its_comparison_fires_nothing() -> None:
    """A report that clears a mismatch may be the one not compared yet (comparisons are at most
    every ``every_s``): while a change waits, the hold does not fire what it may clear."""
    watch = TopologyWatch(TOPO, every_s=5)
    watch.observe(_streamed(reports_of(TOPO, ts=T0)), T0, NS)
    gone = _of("leaf2", _streamed(reports_of(TOPO, faces={L22.a: None}, ts=T0 + 10 * NS)))
    watch.observe(gone, T0 + 10 * NS, NS)
    back = _of("leaf2", _streamed(reports_of(TOPO, ts=T0 + 11 * NS)))
    assert watch.observe(back, T0 + 11 * NS, NS) == []        # compared at 15 s, not before
    assert watch.observe([], T0 + 12 * NS, NS) == []          # held 2 s, but a change waits
    assert watch.observe([], T0 + 15 * NS, NS) == [] and watch.mismatches == []


def test_a_one_read_blip_of_a_polled_device_never_pages_beside_a_streamed_peer() -> None:
    """A periodic read is a snapshot: it shows a drop at its time only. leaf2's read at 10 s
    shows nothing on its uplink (it was read while the neighbour was being re-learnt); spine2
    streams, and its table (which shows leaf2 all along) is no evidence for leaf2's. Time runs
    on, nothing fires; leaf2's next read is clean."""
    watch = TopologyWatch(TOPO)
    reports = reports_of(TOPO, ts=T0)
    watch.observe([*_of("leaf2", reports), *_streamed(
        [r for r in reports if r.device != "leaf2"])], T0, NS)
    blip = _of("leaf2", reports_of(TOPO, faces={L22.a: None}, ts=T0 + 10 * NS))
    assert watch.observe(blip, T0 + 10 * NS, NS) == []
    for k in range(11, 40):
        assert watch.observe([], T0 + k * NS, NS) == []
    assert [m.kind for m in watch.mismatches] == ["one_sided"]    # shown, never confirmed
    assert watch.observe(_of("leaf2", reports_of(TOPO, ts=T0 + 40 * NS)), T0 + 40 * NS, NS) == []
    assert watch.book.active() == [] and watch.mismatches == []
    # the same drop read again 30 s later is confirmed by that read
    again = TopologyWatch(TOPO)
    again.observe(reports_of(TOPO, ts=T0), T0, NS)
    again.observe(blip, T0 + 10 * NS, NS)
    (fired,) = again.observe(
        _of("leaf2", reports_of(TOPO, faces={L22.a: None}, ts=T0 + 40 * NS)), T0 + 40 * NS, NS)
    assert (fired.entity, fired.starts_ns) == ("leaf2~spine2", T0 + 40 * NS)


def test_a_lost_streams_table_is_a_snapshot_and_holds_nothing_up() -> None:
    """A collector whose stream went reports the table once more, not streamed: nobody watches
    it change now, so time passing confirms nothing until the next sync."""
    watch = TopologyWatch(TOPO)
    watch.observe(_streamed(reports_of(TOPO, ts=T0)), T0, NS)
    gone = _of("leaf2", _streamed(reports_of(TOPO, faces={L22.a: None}, ts=T0 + 10 * NS)))
    watch.observe(gone, T0 + 10 * NS, NS)
    lost = [r.model_copy(update={"streamed": False}) for r in gone]
    assert watch.observe(lost, T0 + 11 * NS, NS) == []
    for k in range(12, 30):
        assert watch.observe([], T0 + k * NS, NS) == []
    again = [r.model_copy(update={"ts_ns": T0 + 30 * NS}) for r in gone]   # synced, still gone
    (fired,) = watch.observe(again, T0 + 30 * NS, NS)
    assert fired.entity == "leaf2~spine2" and fired.starts_ns == T0 + 30 * NS
