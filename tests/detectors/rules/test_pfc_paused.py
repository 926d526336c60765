"""Paused by the peer: a port whose egress its peer pauses a share of the time, still draining."""

from __future__ import annotations

import pytest

from tests.detectors.conftest import Feed, active, chain_of, run

PORT = "leaf1:Ethernet3"  # leaf1's uplink to spine1


def test_a_port_paused_a_fifth_of_the_time_fires_after_two_samples(topo, feed):
    chain = chain_of(topo, "pfc_paused")
    run(chain, feed, 2)
    feed.load(PORT, 0.6)
    feed.set(PORT, pfc_rx_frames__3=60000.0, pfc_rx_pause_us__3=0.2e6)
    run(chain, feed, 1)
    assert ("pfc_paused", PORT) not in active(chain)  # one sample is not evidence
    run(chain, feed, 1)
    sym = active(chain)[("pfc_paused", PORT)]
    assert not sym.root_cause and sym.labels["priority"] == "3"
    assert sym.evidence["pause_share"] == pytest.approx(0.2)
    assert sym.evidence["throttle"] == pytest.approx(0.2)  # a timer: the measured share


def test_pauses_below_the_share_do_not_fire(topo, feed):
    chain = chain_of(topo, "pfc_paused")
    feed.set(PORT, pfc_rx_frames__3=3000.0, pfc_rx_pause_us__3=0.01e6)
    run(chain, feed, 6)
    assert not active(chain)


def test_without_a_timer_the_throttle_is_bounded_by_what_still_drains(topo):
    feed = Feed(topo, profile="openconfig")
    chain = chain_of(topo, "pfc_paused")
    feed.load(PORT, 0.9)
    feed.set(PORT, pfc_rx_frames__3=200000.0)  # frames x refresh time: a share bound near 1
    run(chain, feed, 3)
    sym = active(chain)[("pfc_paused", PORT)]
    assert sym.evidence["measured"] == 0.0
    assert sym.evidence["throttle"] == pytest.approx(0.1, abs=0.02)


def test_the_symptom_clears_once_the_pauses_stop(topo, feed):
    chain = chain_of(topo, "pfc_paused")
    feed.set(PORT, pfc_rx_frames__3=60000.0, pfc_rx_pause_us__3=0.2e6)
    run(chain, feed, 3)
    assert ("pfc_paused", PORT) in active(chain)
    feed.set(PORT, pfc_rx_frames__3=0.0, pfc_rx_pause_us__3=0.0)
    run(chain, feed, 3)
    assert ("pfc_paused", PORT) not in active(chain)
