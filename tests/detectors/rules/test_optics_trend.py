"""The optics trend: symbol errors climbing before frames corrupt, and a steady rate that is not."""

from __future__ import annotations

from tests.detectors.conftest import active, at_s, chain_of, run


def test_optics_trend_fires_on_climbing_symbol_errors_before_any_fcs(topo, feed):
    chain = chain_of(topo, "optics_trend", "fcs_errors")
    run(chain, feed, 2)
    for k in range(14):
        feed.set("leaf1:Ethernet3", if_in_symbol_errors=float(2 ** (k / 2)))
        run(chain, feed, 1)
    link = active(chain).get(("faulty_link", "leaf1~spine1"))
    assert link is not None and link.root_cause
    sym = active(chain)[("optics_trend", "leaf1:Ethernet3")]
    assert sym.inhibited_by == link.fingerprint


def test_steady_symbol_errors_are_not_a_trend(topo, feed):
    chain = chain_of(topo, "optics_trend")
    feed.set("leaf1:Ethernet3", if_in_symbol_errors=40.0)
    run(chain, feed, 20)
    assert not active(chain)


def test_a_degradation_is_raised_within_two_samples_of_crossing_the_threshold(topo, feed):
    # a slow geometric ramp (the optics' raw error rate growing a few percent a second): the
    # detector's threshold is `min_errors` symbol errors a sample above the port's normal (here
    # none), so the incident comes on the second sample past it, not once a window has filled
    chain = chain_of(topo, "optics_trend")
    run(chain, feed, 8)
    for k in range(2):
        feed.set("leaf1:Ethernet3", if_in_symbol_errors=3.0 * 1.05 ** k)
        run(chain, feed, 1)
    link = active(chain).get(("faulty_link", "leaf1~spine1"))
    assert link is not None and at_s(link.updated_ns) == feed.t


def test_a_rise_over_a_noisy_normal_counts_and_the_noise_does_not(topo, feed):
    chain = chain_of(topo, "optics_trend")
    feed.set("leaf1:Ethernet3", if_in_symbol_errors=5.0)  # this link's pre-FEC normal
    run(chain, feed, 30)
    assert not active(chain)
    feed.set("leaf1:Ethernet3", if_in_symbol_errors=80.0)
    run(chain, feed, 2)
    assert ("faulty_link", "leaf1~spine1") in active(chain)


def test_a_degradation_that_has_only_just_begun_counts_its_errors_across_clean_samples(topo, feed):
    # a fraction of an error per interval: the clean samples in between are no evidence of health
    chain = chain_of(topo, "optics_trend")
    run(chain, feed, 8)
    for rate in (1.0, 0.0, 0.0, 1.0):
        feed.set("leaf1:Ethernet3", if_in_symbol_errors=rate)
        run(chain, feed, 1)
    assert ("faulty_link", "leaf1~spine1") in active(chain)
