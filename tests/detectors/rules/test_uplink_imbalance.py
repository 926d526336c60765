"""Uplink imbalance: a leaf's ECMP group collapsing onto one member after a learned baseline."""

from __future__ import annotations

from detectors.chain import DetectionChain
from pipeline.topology.model import spine_leaf
from tests.detectors.conftest import Feed, active, chain_of, run

UPLINKS = [f"leaf1:Ethernet{k}" for k in range(5, 9)]  # spine_leaf(4, 2, 4): leaf uplinks 5..8


def leaf_loaded(*loads: float) -> tuple[Feed, DetectionChain]:
    """leaf1's four uplinks at these loads, and a chain with only the imbalance rule."""
    topo = spine_leaf(4, 2, 4)
    feed = Feed(topo)
    spread(feed, *loads)
    return feed, chain_of(topo, "uplink_imbalance")


def spread(feed: Feed, *loads: float) -> None:
    for port, load in zip(UPLINKS, loads, strict=True):
        feed.load(port, load)


def quiet_after(chain: DetectionChain, feed: Feed, samples: int, *loads: float) -> bool:
    """Whether nothing is active after ``samples`` samples at these uplink loads."""
    spread(feed, *loads)
    run(chain, feed, samples)
    return not active(chain)


def hosts_held(feed: Feed, share: float = 0.4) -> None:
    """leaf1 pauses one of its hosts: the group is the bottleneck."""
    feed.set("leaf1:Ethernet1", pfc_tx_frames__3=50000.0, pfc_tx_pause_us__3=share * 1e6)


def test_collision_onto_one_uplink_after_a_balanced_baseline():
    feed, chain = leaf_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    spread(feed, 0.05, 0.05, 0.05, 1.0)
    hosts_held(feed)
    run(chain, feed, 1)
    assert not active(chain)
    run(chain, feed, 1)  # two samples: a hash does not flicker
    assert set(active(chain)) == {("uplink_imbalance", "leaf1")}
    run(chain, feed, 1)  # named an interval later: a cause that began with it would be known
    incident = active(chain)[("ecmp_imbalance", "leaf1")]
    assert incident.root_cause and incident.ports == ("leaf1:Ethernet8",)


def test_a_collision_that_does_not_hurt_yet_never_becomes_the_leafs_normal():
    # the flows crowd onto one uplink while nobody is held back and the leaf's other traffic
    # ends (the total falls by 40 %: not a rearrangement of the same flows, so not named on its
    # own); load rises later and the collision starts to hurt: it is still a collision (the
    # baseline kept the hash's normal)
    feed, chain = leaf_loaded(0.4, 0.4, 0.4, 0.4)
    run(chain, feed, 15)
    spread(feed, 0.05, 0.05, 0.05, 0.8)
    run(chain, feed, 60)
    assert not active(chain)
    spread(feed, 0.05, 0.05, 0.05, 1.0)
    hosts_held(feed)
    run(chain, feed, 3)
    assert ("ecmp_imbalance", "leaf1") in active(chain)


def test_a_leaf_that_was_always_uneven_is_its_own_baseline():
    feed, chain = leaf_loaded(1.0, 1.0, 0.0, 0.0)
    hosts_held(feed, 0.2)
    run(chain, feed, 40)
    assert not active(chain)


def test_all_traffic_on_one_member_from_the_start_is_the_hash_not_a_collision():
    # low-entropy traffic under a plain 5-tuple hash can land every flow of a leaf on one uplink:
    # a control run with such traffic stays quiet; only a later move onto fewer members fires
    feed, chain = leaf_loaded(1.0, 0.0, 0.0, 0.0)
    hosts_held(feed)
    run(chain, feed, 40)
    assert not active(chain)


def test_a_dip_while_other_traffic_is_held_back_is_not_learned_as_the_normal():
    # an incast elsewhere holds some of this leaf's flows back: its hot uplink's share dips for
    # a minute, then comes back to where the hash always put it. That return is no collision
    feed, chain = leaf_loaded(1.0, 0.15, 0.15, 0.15)
    hosts_held(feed)
    run(chain, feed, 15)
    spread(feed, 0.45, 0.15, 0.15, 0.15)
    run(chain, feed, 60)
    assert quiet_after(chain, feed, 10, 1.0, 0.15, 0.15, 0.15)


def test_members_cool_because_their_spines_pause_them_are_no_collision():
    # a deadlock or a storm beyond the spines pauses three of leaf1's uplinks: the fourth carries
    # the most and leaf1 holds its hosts back, yet the hash moved nothing. With the same loads and
    # the cool members free to send, it is a collision
    feed, chain = leaf_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    spread(feed, 0.05, 0.05, 0.05, 1.0)
    hosts_held(feed)
    for port in UPLINKS[:3]:
        feed.set(port, pfc_rx_frames__3=50000.0, pfc_rx_pause_us__3=0.6e6)
    run(chain, feed, 10)
    assert not active(chain)
    for port in UPLINKS[:3]:
        feed.set(port, pfc_rx_frames__3=0.0, pfc_rx_pause_us__3=0.0)
    run(chain, feed, 3)
    assert ("ecmp_imbalance", "leaf1") in active(chain)


def test_a_collision_short_of_line_rate_is_named_from_the_rearrangement():
    # the same flows moved onto one member: the group's total is unchanged, nothing saturates and
    # nobody is held back yet, but the siblings' headroom is gone
    feed, chain = leaf_loaded(0.2, 0.2, 0.2, 0.2)
    run(chain, feed, 15)
    spread(feed, 0.05, 0.05, 0.05, 0.65)
    run(chain, feed, 2)
    assert set(active(chain)) == {("uplink_imbalance", "leaf1")}
    symptom = active(chain)[("uplink_imbalance", "leaf1")]
    assert symptom.evidence["hot_util"] < 0.9 and symptom.evidence["host_pause"] == 0.0
    run(chain, feed, 1)
    incident = active(chain)[("ecmp_imbalance", "leaf1")]
    assert incident.root_cause and incident.ports == ("leaf1:Ethernet8",)
    assert quiet_after(chain, feed, 8, 0.2, 0.2, 0.2, 0.2)  # the hash spreads them again


def test_a_hot_member_its_spine_pauses_shows_congestion_beyond_not_a_rearrangement():
    # an incast's flows pinned onto one uplink, held at the spine (it pauses that uplink), while
    # leaf1's other traffic is held harder: the shares move with the total kept, but what the
    # hot member carries is what lies beyond it lets through, not its flows' demand
    feed, chain = leaf_loaded(0.2, 0.2, 0.2, 0.2)
    run(chain, feed, 15)
    spread(feed, 0.05, 0.05, 0.05, 0.65)
    feed.set(UPLINKS[3], pfc_rx_frames__3=50000.0, pfc_rx_pause_us__3=0.5e6)
    run(chain, feed, 10)
    assert not active(chain)
    # the spine lets it go: the same shares with the hot member free are a rearrangement
    feed.set(UPLINKS[3], pfc_rx_frames__3=0.0, pfc_rx_pause_us__3=0.0)
    run(chain, feed, 3)
    assert ("ecmp_imbalance", "leaf1") in active(chain)


def test_traffic_that_starts_or_stops_on_one_member_is_no_collision():
    # a share can rise because new flows hash onto one member or because the others' flows
    # end; either changes the group's total, which moved flows do not
    feed, chain = leaf_loaded(0.2, 0.2, 0.2, 0.2)
    run(chain, feed, 15)
    assert quiet_after(chain, feed, 20, 0.2, 0.2, 0.2, 0.8)
    assert quiet_after(chain, feed, 20, 0.02, 0.02, 0.02, 0.2)


def test_a_group_of_wide_members_carrying_a_little_is_judged():
    # eight 400G uplinks fed by two 100G hosts at half load carry a quarter of one member in all:
    # little per member, yet plenty for the shares to mean something
    topo = spine_leaf(4, 2, 2, uplinks_per_pair=2)
    feed = Feed(topo)
    ups = [str(ln.a if ln.a.device == "leaf1" else ln.b) for ln in topo.up_links("leaf1")]
    for port in ups:
        feed.load(port, 0.035)
    chain = chain_of(topo, "uplink_imbalance")
    run(chain, feed, 15)
    for port in ups:
        feed.load(port, 0.0)
    feed.load(ups[0], 0.28)
    run(chain, feed, 3)
    assert ("ecmp_imbalance", "leaf1") in active(chain)


def test_the_sample_that_straddles_the_onset_counts_as_the_first_of_the_run():
    # a rate sample spans an interval: the one holding the onset shows part of the move (here a
    # fifth of it), the next the whole; the collision is named on that next sample
    feed, chain = leaf_loaded(0.2, 0.2, 0.2, 0.2)
    run(chain, feed, 15)
    spread(feed, 0.17, 0.17, 0.17, 0.29)
    run(chain, feed, 1)
    assert not active(chain)
    spread(feed, 0.05, 0.05, 0.05, 0.65)
    run(chain, feed, 1)
    assert set(active(chain)) == {("uplink_imbalance", "leaf1")}


def test_the_sample_that_straddles_a_saturating_collision_counts_as_the_first_of_the_run():
    # the flows that move saturate the member: the sample holding the onset shows the whole
    # shift, the member only halfway from its level (0.5) to line rate and its hosts held; the
    # next sample, saturated, names it
    feed, chain = leaf_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    spread(feed, 0.2, 0.2, 0.2, 0.8)
    hosts_held(feed)
    run(chain, feed, 1)
    assert not active(chain)
    spread(feed, 0.05, 0.05, 0.05, 1.0)
    run(chain, feed, 1)
    assert set(active(chain)) == {("uplink_imbalance", "leaf1")}
    # a member that stays short of halfway is not the start of a run: two full samples needed
    feed, chain = leaf_loaded(0.5, 0.5, 0.5, 0.5)
    run(chain, feed, 15)
    spread(feed, 0.2, 0.2, 0.2, 0.6)
    hosts_held(feed)
    run(chain, feed, 1)
    spread(feed, 0.05, 0.05, 0.05, 1.0)
    run(chain, feed, 1)
    assert not active(chain)
    run(chain, feed, 1)
    assert set(active(chain)) == {("uplink_imbalance", "leaf1")}


def test_a_part_move_that_stays_is_never_a_collision_nor_completes_one_alone():
    feed, chain = leaf_loaded(0.2, 0.2, 0.2, 0.2)
    run(chain, feed, 15)
    assert quiet_after(chain, feed, 20, 0.17, 0.17, 0.17, 0.29)
    # after a run of part moves, one full sample is the first of its run, not its last
    spread(feed, 0.05, 0.05, 0.05, 0.65)
    run(chain, feed, 1)
    assert not active(chain)
    run(chain, feed, 1)
    assert set(active(chain)) == {("uplink_imbalance", "leaf1")}
