"""Egress oversubscribed: a host-facing port at line rate with a standing queue and a receiver
that is not pausing (an incast candidate; the correlator decides from the senders' throttle)."""

from __future__ import annotations

from pipeline.topology.model import Topology
from tests.detectors.conftest import LINE, Feed, active, chain_of, run

HOST_PORT = "leaf2:Ethernet1"  # faces host3
MARKED = 0.3 * LINE / 8 / 4150


def test_standing_queue_marks_congestion_and_saturated_host_port_is_an_incast_candidate(
        topo, feed):
    chain = chain_of(topo, "queue_buildup", "egress_oversubscribed")
    feed.load(HOST_PORT, 1.0)
    feed.set(HOST_PORT, queue_ecn_marked_pkts__3=MARKED)
    run(chain, feed, 3)
    found = active(chain)
    assert ("queue_buildup", HOST_PORT) in found
    assert ("egress_oversubscribed", HOST_PORT) in found
    # without a throttled sender behind it the correlator raises no incast
    assert not any(a.root_cause for a in found.values())


def test_a_receiver_that_pauses_is_slow_not_oversubscribed(topo, feed):
    chain = chain_of(topo, "egress_oversubscribed")
    feed.load(HOST_PORT, 1.0)
    # pausing 7 % of the time: above the 5 % a flooded receiver never reaches
    feed.set(HOST_PORT, queue_ecn_marked_pkts__3=MARKED, pfc_rx_frames__3=8000.0,
             pfc_rx_pause_us__3=0.07e6)
    run(chain, feed, 4)
    assert not active(chain)


def test_a_saturated_fabric_port_is_not_a_host_egress(topo, feed):
    chain = chain_of(topo, "egress_oversubscribed")
    feed.load("spine1:Ethernet2", 1.0)
    feed.set("spine1:Ethernet2", queue_ecn_marked_pkts__3=MARKED)
    run(chain, feed, 4)
    assert not active(chain)


def test_the_symptom_says_how_much_the_leaf_carries_host_to_host(topo: Topology,
                                                                feed: Feed) -> None:
    # leaf2's hosts send 130 % + 30 % of a line rate, its uplinks carry 30 % + 30 % of it up:
    # one line rate stays on the leaf, the most host3 can receive from its neighbours
    chain = chain_of(topo, "egress_oversubscribed")
    feed.load(HOST_PORT, 1.0)
    feed.set(HOST_PORT, queue_ecn_marked_pkts__3=MARKED, if_in_octets=1.3 * LINE / 8)
    run(chain, feed, 3)
    found = active(chain)[("egress_oversubscribed", HOST_PORT)]
    assert abs(found.evidence["local_in"] - 1.0) < 1e-3
    # what its hosts send all goes up: nothing of it can reach host3 from the leaf
    for up in ("leaf2:Ethernet3", "leaf2:Ethernet4"):
        feed.set(up, if_out_octets=0.8 * LINE / 8)
    run(chain, feed, 2)
    assert active(chain)[("egress_oversubscribed", HOST_PORT)].evidence["local_in"] == 0.0


def _saturate(feed: Feed, on: bool) -> None:
    feed.load(HOST_PORT, 1.0 if on else 0.3)
    feed.set(HOST_PORT, queue_ecn_marked_pkts__3=MARKED if on else 0.0)


def test_a_port_saturated_since_monitoring_began_is_habitual_until_it_cools_for_a_while(
        topo: Topology, feed: Feed) -> None:
    chain = chain_of(topo, "egress_oversubscribed")
    warmup = 10  # the option's default
    _saturate(feed, True)
    run(chain, feed, 3)
    assert active(chain)[("egress_oversubscribed", HOST_PORT)].evidence["habitual"] == 1.0
    # a dip shorter than the warm-up is still the same habit when it comes back
    _saturate(feed, False)
    run(chain, feed, warmup - 2)
    _saturate(feed, True)
    run(chain, feed, 3)
    assert active(chain)[("egress_oversubscribed", HOST_PORT)].evidence["habitual"] == 1.0
    # in the rule's hysteresis (busy and marking, short of line rate) for longer than the
    # warm-up: neither free of it nor new when it saturates again
    feed.load(HOST_PORT, 0.9)
    feed.set(HOST_PORT, queue_ecn_marked_pkts__3=MARKED)
    run(chain, feed, warmup + 2)
    _saturate(feed, True)
    run(chain, feed, 2)
    assert active(chain)[("egress_oversubscribed", HOST_PORT)].evidence["habitual"] == 1.0
    # free of it for the warm-up in a row: a saturation after that is new (an incast candidate)
    _saturate(feed, False)
    run(chain, feed, warmup + 1)
    assert ("egress_oversubscribed", HOST_PORT) not in active(chain)
    _saturate(feed, True)
    run(chain, feed, 3)
    assert active(chain)[("egress_oversubscribed", HOST_PORT)].evidence["habitual"] == 0.0


def test_a_port_watched_cool_before_it_saturates_is_not_habitual(topo: Topology,
                                                                  feed: Feed) -> None:
    chain = chain_of(topo, "egress_oversubscribed")
    _saturate(feed, False)
    run(chain, feed, 12)
    _saturate(feed, True)
    run(chain, feed, 3)
    assert active(chain)[("egress_oversubscribed", HOST_PORT)].evidence["habitual"] == 0.0
