"""Links down and flapping, from status reports, carrier counters or ifLastChange."""

from __future__ import annotations

from tests.detectors.conftest import Feed, active, at_s, chain_of, run

A, B = "leaf1:Ethernet3", "spine1:Ethernet1"  # the two ends of leaf1~spine1


def down(feed: Feed, *ports: str, admin: float = 1.0) -> None:
    for p in ports:
        feed.set(p, if_oper_status=2.0, if_admin_status=admin)
        feed.load(p, 0.0)


def up(feed: Feed, *ports: str) -> None:
    for p in ports:
        feed.set(p, if_oper_status=1.0, if_admin_status=1.0)
        feed.load(p, 0.3)


def test_link_down_confirmed_by_two_samples_names_the_link(topo, feed):
    chain = chain_of(topo, "link_state")
    run(chain, feed, 3)
    down(feed, A, B)
    run(chain, feed, 1)
    assert not active(chain)
    run(chain, feed, 1)
    incident = active(chain)[("link_down", "leaf1~spine1")]
    assert incident.root_cause and set(incident.ports) == {A, B}
    assert incident.confidence == 1.0 and at_s(incident.updated_ns) == 5.0


def test_admin_down_is_a_drain_not_a_fault(topo, feed):
    chain = chain_of(topo, "link_state")
    run(chain, feed, 2)
    down(feed, A, B, admin=2.0)
    feed.set(A, if_carrier_transitions=1.0)  # the drain takes the port down: one transition
    run(chain, feed, 1)
    feed.set(A, if_carrier_transitions=0.0)
    run(chain, feed, 4)
    up(feed, A, B)
    feed.set(A, if_carrier_transitions=1.0)
    run(chain, feed, 1)
    feed.set(A, if_carrier_transitions=0.0)
    run(chain, feed, 3)
    assert not active(chain)


def test_a_bounce_supersedes_the_link_down_it_began_as(topo, feed):
    chain = chain_of(topo, "link_state")
    run(chain, feed, 3)
    down(feed, A, B)
    changes = run(chain, feed, 2)
    assert any(a.name == "link_down" and a.root_cause for a in changes)
    up(feed, A, B)
    changes = run(chain, feed, 1)
    flap = active(chain)[("link_flap", "leaf1~spine1")]
    assert flap.root_cause
    demoted = [a for a in changes if a.name == "link_down"]
    assert demoted and not demoted[-1].root_cause and demoted[-1].inhibited_by == flap.fingerprint


def test_bounce_inside_one_interval_seen_only_by_the_carrier_counter(topo, feed):
    chain = chain_of(topo, "link_state")
    run(chain, feed, 3)
    feed.set(A, if_carrier_transitions=2.0)  # down and up between two samples
    run(chain, feed, 1)
    feed.set(A, if_carrier_transitions=0.0)
    run(chain, feed, 1)
    assert ("link_flap", "leaf1~spine1") in active(chain)


def test_snmp_last_change_reveals_a_bounce_between_polls(topo):
    feed = Feed(topo, profile="snmp")
    chain = chain_of(topo, "link_state")
    run(chain, feed, 3)
    feed.set(B, if_last_change=3.4)
    run(chain, feed, 1)
    assert ("link_flap", "leaf1~spine1") in active(chain)


def test_flap_clears_after_a_stable_period_and_a_long_outage_is_not_a_flap(topo, feed):
    from detectors.rules.link_state import LinkState

    chain = chain_of(topo, "link_state")
    stable = next(d for d in chain.detectors if isinstance(d, LinkState)).opts.stable_s
    run(chain, feed, 2)
    down(feed, A, B)
    run(chain, feed, 40)  # longer than a bounce: a repair, not a flap
    up(feed, A, B)
    run(chain, feed, 2)
    assert not active(chain)
    feed.set(A, if_carrier_transitions=2.0)
    run(chain, feed, 1)
    feed.set(A, if_carrier_transitions=0.0)
    assert ("link_flap", "leaf1~spine1") in active(chain)
    run(chain, feed, int(stable) + 2)
    assert not active(chain)


def test_a_link_that_flapped_and_then_stays_down_is_down_within_two_samples(topo, feed):
    # the flap's own symptom lasts a minute after its last bounce; the outage that follows must
    # not hide behind it (issue 10.3: "link down after a period of flapping")
    chain = chain_of(topo, "link_state")
    run(chain, feed, 3)
    for _ in range(3):  # three short bounces, one interval down each
        down(feed, A, B)
        run(chain, feed, 1)
        up(feed, A, B)
        run(chain, feed, 4)
    assert ("link_flap", "leaf1~spine1") in active(chain)
    down(feed, A, B)
    run(chain, feed, 1)
    assert ("link_down", "leaf1~spine1") not in active(chain)
    run(chain, feed, 1)
    now = active(chain)
    incident = now[("link_down", "leaf1~spine1")]
    assert incident.root_cause and at_s(incident.updated_ns) == feed.t
    assert ("link_flap", "leaf1~spine1") in now  # the history stays visible beside it
    # it stays down: the incident stands, and its evidence keeps up with the samples
    run(chain, feed, 5)
    incident = active(chain)[("link_down", "leaf1~spine1")]
    assert incident.root_cause and at_s(incident.updated_ns) == feed.t
