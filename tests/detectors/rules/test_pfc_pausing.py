"""Pausing the peer: a port through which its switch pauses the peer, with the peer's throttle."""

from __future__ import annotations

import pytest

from tests.detectors.conftest import Feed, active, chain_of, run


def test_pause_tx_carries_the_throttle_of_the_paused_peer(topo, feed):
    chain = chain_of(topo, "pfc_pausing")
    feed.load("leaf1:Ethernet2", 0.08)
    feed.set("leaf1:Ethernet2", pfc_tx_frames__3=130000.0, pfc_tx_pause_us__3=0.9e6)
    run(chain, feed, 3)
    sym = active(chain)[("pfc_pausing", "leaf1:Ethernet2")]
    assert not sym.root_cause and sym.evidence["throttle"] == pytest.approx(0.9)


def test_frames_only_throttle_is_bounded_by_utilisation(topo):
    feed = Feed(topo, profile="openconfig")
    chain = chain_of(topo, "pfc_pausing")
    feed.load("leaf1:Ethernet2", 0.8)
    feed.set("leaf1:Ethernet2", pfc_tx_frames__3=200000.0)
    run(chain, feed, 3)
    sym = active(chain)[("pfc_pausing", "leaf1:Ethernet2")]
    assert sym.evidence["measured"] == 0.0
    assert sym.evidence["throttle"] == pytest.approx(0.2, abs=0.01)


def test_a_switch_that_barely_pauses_its_peer_raises_nothing(topo, feed):
    chain = chain_of(topo, "pfc_pausing")
    feed.set("leaf1:Ethernet2", pfc_tx_frames__3=2000.0, pfc_tx_pause_us__3=0.01e6)
    run(chain, feed, 6)
    assert not active(chain)
