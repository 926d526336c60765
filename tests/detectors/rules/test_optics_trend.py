"""The optics trend: symbol errors climbing before frames corrupt, and a steady rate that is not."""

from __future__ import annotations

from tests.detectors.conftest import active, chain_of, run


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
