"""Egress oversubscribed: a host-facing port at line rate with a standing queue and a receiver
that is not pausing (an incast candidate; the correlator decides from the senders' throttle)."""

from __future__ import annotations

from tests.detectors.conftest import LINE, active, chain_of, run

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
