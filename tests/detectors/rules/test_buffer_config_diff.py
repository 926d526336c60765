"""Buffer configuration unlike the role's: the configuration decides, at any load."""

from __future__ import annotations

from pipeline.metrics import metric_id
from pipeline.model import BatchBuilder, SampleBatch
from pipeline.topology.model import spine_leaf
from tests.detectors.conftest import EPOCH, Feed, active, chain_of, run

KB = 1024.0
HEALTHY = {"pfc_xoff_bytes": 400 * KB, "pfc_xon_bytes": 336 * KB, "pfc_headroom_bytes": 200 * KB}


def config(feed: Feed, device: str, scale: float = 1.0, kmin: float = 50 * KB,
           **override: float) -> SampleBatch:
    """The thresholds ``device`` serves as configuration now (priority 3 lossless)."""
    b = BatchBuilder()
    ts = EPOCH + round(feed.t * 1e9)
    for metric, value in HEALTHY.items():
        b.add(ts, device, "", metric_id(metric), 3, override.get(metric, value * scale))
    b.add(ts, device, "", metric_id("ecn_kmin_bytes"), 3, kmin)
    b.add(ts, device, "", metric_id("ecn_kmax_bytes"), 3, 2048 * KB)
    return b.build()


def read_all(chain, feed: Feed, **per_device: float) -> None:
    """Every switch's configuration, with the scale of its thresholds where given."""
    chain.observe([config(feed, sw, per_device.get(sw, 1.0)) for sw in feed.topology.switches])


def test_a_switch_with_a_lowered_xoff_is_misconfigured_at_any_load():
    topo = spine_leaf(3, 3, 2)
    feed = Feed(topo)
    for port in feed.rates:
        feed.load(port, 0.05)  # nothing reaches any threshold: the counters are silent
    chain = chain_of(topo, "buffer_config_diff", "pause_without_load")
    run(chain, feed, 2)
    read_all(chain, feed)
    assert not active(chain)
    run(chain, feed, 1)
    read_all(chain, feed, spine2=0.3)
    incident = active(chain)[("buffer_misconfig", "spine2")]
    assert incident.root_cause and incident.confidence == 1.0
    assert incident.evidence["pfc_xoff_bytes@3"] == 0.3 * 400 * KB
    assert incident.evidence["peer_pfc_xoff_bytes@3"] == 400 * KB
    # put right again: resolved with the next reading
    run(chain, feed, 1)
    read_all(chain, feed)
    assert not active(chain)


def test_of_two_switches_that_disagree_the_lower_one_is_wrong():
    topo = spine_leaf(2, 3, 2)
    feed = Feed(topo)
    chain = chain_of(topo, "buffer_config_diff")
    run(chain, feed, 1)
    read_all(chain, feed, spine1=0.25)
    assert set(active(chain)) == {("buffer_misconfig", "spine1"),
                                  ("buffer_config_diff", "spine1")}


def test_roles_are_compared_apart_and_small_differences_are_not_a_misconfiguration():
    topo = spine_leaf(2, 3, 2)
    feed = Feed(topo)
    chain = chain_of(topo, "buffer_config_diff")
    run(chain, feed, 1)
    # deep-buffer spines: every spine far above every leaf is their design, not a mistake;
    # a leaf at 70 % of its peers is a tuning difference, not a broken profile
    read_all(chain, feed, spine1=40.0, spine2=40.0, leaf2=0.7)
    assert not active(chain)


def test_xoff_below_the_ecn_threshold_pauses_before_any_mark():
    topo = spine_leaf(2, 2, 2)
    feed = Feed(topo)
    chain = chain_of(topo, "buffer_config_diff")
    run(chain, feed, 1)
    # every leaf alike, so no peer is unlike it: the inverted pair alone says it
    chain.observe([config(feed, sw, kmin=(500 * KB if sw.startswith("leaf") else 50 * KB))
                   for sw in topo.switches])
    found = active(chain)
    assert ("buffer_misconfig", "leaf1") in found and ("buffer_misconfig", "leaf2") in found
    assert found[("buffer_misconfig", "leaf1")].evidence["pfc_before_ecn"] == 1.0
    assert ("buffer_misconfig", "spine1") not in found


def symptom(chain, device: str):
    """The rule's own symptom on ``device``, or None."""
    rule = next(d for d in chain.detectors if d.name == "buffer_config_diff")
    return next((a for a in rule.symptoms.alerts() if a.entity == device), None)


def test_switches_read_one_at_a_time_are_judged_against_what_their_peers_last_said():
    # each switch reads its configuration at its own moment: a reading that repeats the last
    # one keeps every verdict (restamped), a peer that changes moves the others' verdicts even
    # though they did not read again
    topo = spine_leaf(3, 3, 2)
    feed = Feed(topo)
    chain = chain_of(topo, "buffer_config_diff")
    run(chain, feed, 1)
    read_all(chain, feed, spine2=0.3)
    first = symptom(chain, "spine2")
    assert first is not None and symptom(chain, "spine1") is None
    for sw in ("spine1", "spine3", "spine2"):  # the same values again, one switch per step
        run(chain, feed, 1)
        chain.observe([config(feed, sw, 0.3 if sw == "spine2" else 1.0)])
    again = symptom(chain, "spine2")
    assert again is not None and again.evidence == first.evidence
    assert again.updated_ns > first.updated_ns  # its own repeat restamps it
    # spine1 and spine3 lower theirs to spine2's: spine2 is no longer unlike its role
    run(chain, feed, 1)
    chain.observe([config(feed, "spine1", 0.3)])
    assert symptom(chain, "spine2") is not None  # one peer of two: the median is still high
    run(chain, feed, 1)
    chain.observe([config(feed, "spine3", 0.3)])
    assert symptom(chain, "spine2") is None and symptom(chain, "spine1") is None
    # spine3 goes back up: spine2 (and spine1) are below half the median of their peers again
    # (0.3 < 0.5 x median(0.3, 1.0)), though neither read again
    run(chain, feed, 1)
    chain.observe([config(feed, "spine3", 1.0)])
    assert symptom(chain, "spine2") is not None and symptom(chain, "spine3") is None
