"""FCS errors at a receiver: CorrOpt's corruption rate, bursts, and a clean stretch to clear."""

from __future__ import annotations

import pytest

from tests.detectors.conftest import Feed, active, chain_of, run


@pytest.mark.parametrize("profile", ["sonic", "snmp"])
def test_corruption_fires_on_the_receiving_port_and_names_the_link(topo, profile):
    feed = Feed(topo, profile=profile)
    chain = chain_of(topo, "fcs_errors")
    run(chain, feed, 2)
    pkts = feed.rates["spine1:Ethernet2"]["if_in_pkts"]
    feed.set("spine1:Ethernet2", if_in_fcs_errors=pkts * 1e-5)  # ~110 bad frames a sample
    run(chain, feed, 1)
    link = active(chain)[("faulty_link", "leaf2~spine1")]
    assert link.root_cause and link.ports == ("spine1:Ethernet2",)
    assert link.evidence["corruption"] == pytest.approx(1e-5, rel=0.05)
    assert link.severity.value == "critical"


def test_corruption_clears_only_after_enough_clean_frames(topo, feed):
    chain = chain_of(topo, "fcs_errors")
    run(chain, feed, 2)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=3.0)  # ~3e-7 of 11 M frames/s
    run(chain, feed, 3)
    assert ("faulty_link", "leaf2~spine1") in active(chain)
    feed.load("spine1:Ethernet2", 0.0001)  # almost no traffic: silence proves nothing
    feed.set("spine1:Ethernet2", if_in_fcs_errors=0.0)
    run(chain, feed, 6)
    assert ("faulty_link", "leaf2~spine1") in active(chain)
    feed.load("spine1:Ethernet2", 0.3)
    run(chain, feed, 4)
    assert ("faulty_link", "leaf2~spine1") not in active(chain)


def test_a_few_bad_frames_need_a_second_sample_and_a_burst_does_not(topo, feed):
    chain = chain_of(topo, "fcs_errors")
    run(chain, feed, 2)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=3.0)
    feed.set("spine2:Ethernet1", if_in_fcs_errors=12.0)
    links = lambda: {e for k, e in active(chain) if k == "faulty_link"}  # noqa: E731
    run(chain, feed, 1)
    assert links() == {"leaf1~spine2"}
    run(chain, feed, 1)
    assert links() == {"leaf1~spine2", "leaf2~spine1"}


def test_a_single_stray_fcs_error_does_not_fire(topo, feed):
    chain = chain_of(topo, "fcs_errors")
    run(chain, feed, 2)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=1.0)
    run(chain, feed, 1)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=0.0)
    run(chain, feed, 5)
    assert not active(chain)
