"""Alerts, incidents, actions and the fabric status through the query layer, on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.errors import QueryError
from pipeline.model import ActionResult, Alert, Severity
from pipeline.topology.model import spine_leaf
from tests.ui.ui_fabric import FAULTY_LINK, NS, batch, now_s, write_fabric
from ui.query.layer import Query, StatusOptions


def alert(name: str, entity: str, at: int, **kw: Any) -> Alert:
    return Alert(name=name, entity=entity, starts_ns=kw.pop("starts", at), updated_ns=at,
                 **kw)


def names(found: Any) -> list[tuple[str, str]]:
    return sorted((a.name, a.entity) for a in found.alerts)


def test_current_state_is_the_latest_row(store: Any) -> None:
    t = now_s() - 600 * NS
    first = alert("pfc_storm", "host3", t, severity=Severity.WARNING)
    worse = first.model_copy(update={"updated_ns": t + 10 * NS,
                                     "severity": Severity.CRITICAL})
    over = worse.model_copy(update={"updated_ns": t + 20 * NS, "ends_ns": t + 20 * NS})
    store.insert_alerts([first, worse, over])
    store.insert_alerts([worse])  # a redelivery
    q = Query(store)
    assert q.alerts().alerts == []  # resolved now
    [mid] = q.alerts(at=t + 15 * NS).alerts
    assert (mid.severity, mid.status, mid.ends_ns) == ("critical", "firing", None)
    assert q.alerts(at=t - NS).alerts == []
    # a severity filter applies to the state at that time, not to any row
    assert q.alerts(at=t + 5 * NS, severity="critical").alerts == []
    assert len(q.alerts(at=t + 15 * NS, severity="critical").alerts) == 1


def test_a_refired_alert_is_two_episodes(store: Any) -> None:
    t = now_s() - 600 * NS
    one = alert("link_flap", "leaf1~spine1", t)
    one_end = one.model_copy(update={"updated_ns": t + 30 * NS, "ends_ns": t + 30 * NS})
    two = alert("link_flap", "leaf1~spine1", t + 60 * NS)
    store.insert_alerts([one, one_end, two])
    store.insert_alerts([one, one_end, two])
    q = Query(store)
    episodes = q.alerts(start=t - NS, end=t + 120 * NS).alerts
    assert [(a.status, a.starts_ns) for a in episodes] == [("firing", t + 60 * NS),
                                                           ("resolved", t)]
    assert [a.starts_ns for a in q.alerts().alerts] == [t + 60 * NS]
    # a range between the episodes sees only the one that was active then
    assert q.alerts(start=t + 40 * NS, end=t + 50 * NS).alerts == []
    assert len(q.alerts(start=t + 10 * NS, end=t + 50 * NS).alerts) == 1


def test_incidents_carry_their_symptoms(store: Any) -> None:
    fabric = write_fabric(store, duration_s=60, fault_after_s=30)
    stray = alert("ecn_marking", "leaf4:Ethernet2", fabric.end_ns - NS, root_cause=False)
    store.insert_alerts([stray])
    found = Query(store).incidents()
    [incident] = found.incidents
    assert (incident.name, incident.entity) == ("faulty_link", FAULTY_LINK)
    assert sorted(s.entity for s in incident.symptoms) == sorted(fabric.faulty_ports)
    assert [a.entity for a in found.unexplained] == ["leaf4:Ethernet2"]
    assert incident.evidence == {"fcs_errors_per_s": 500.0}
    assert "both ends" in incident.summary


def test_filters(store: Any) -> None:
    fabric = write_fabric(store, duration_s=60, fault_after_s=30)
    q = Query(store)
    assert names(q.alerts(root_cause=True)) == [("faulty_link", FAULTY_LINK)]
    assert len(q.alerts(root_cause=False).alerts) == 2
    assert names(q.alerts(name="fcs_errors,faulty_link", entity=FAULTY_LINK)) == [
        ("faulty_link", FAULTY_LINK)]
    link = fabric.topology.link_by_id[FAULTY_LINK]
    assert names(q.alerts(touching="spine2")) == [("faulty_link", FAULTY_LINK),
                                                   ("fcs_errors", str(link.b))]
    assert q.alerts(touching="leaf1").alerts == []
    assert q.alerts(fingerprint=fabric.incident.fingerprint).alerts[0].entity == FAULTY_LINK
    history = q.alerts(start=fabric.start_ns, name="pfc_storm").alerts
    assert [(a.entity, a.status) for a in history] == [("host1", "resolved")]
    with pytest.raises(QueryError, match="not both"):
        q.alerts(at="now", start="now-1h")
    with pytest.raises(QueryError, match="not a valid name"):
        q.alerts(name="x'); DROP TABLE alerts; --")


def test_actions_newest_first_without_duplicates(store: Any) -> None:
    t = now_s() - 300 * NS
    acts = [ActionResult(action="drain", target="leaf1~spine1", outcome="refused", mode="auto",
                         detail="capacity floor", at_ns=t),
            ActionResult(action="notify", target="leaf1~spine1", outcome="done", at_ns=t + NS)]
    store.insert_actions(acts)
    store.insert_actions(acts[:1])
    q = Query(store)
    assert [a.action for a in q.actions().actions] == ["notify", "drain"]
    assert [a.detail for a in q.actions(outcome="refused").actions] == ["capacity floor"]
    assert q.actions(start=t + 2 * NS, end=t + 10 * NS).actions == []
    with pytest.raises(QueryError, match="not one of"):
        q.actions(outcome="exploded")


def test_fabric_status(store: Any) -> None:
    fabric = write_fabric(store, duration_s=120, fault_after_s=60)
    q = Query(store, fabric.topology, options=StatusOptions(silent_after_s=3600))
    status = q.status(top=5)
    assert status.telemetry.state == "live" and status.telemetry.stale_devices == []
    worst = status.entities[0]
    assert (worst.entity, worst.kind, worst.level, worst.alert) == (
        FAULTY_LINK, "link", "critical", "faulty_link")
    # the explained symptoms are shown, but not red: red marks the root
    ports = {e.entity: e.level for e in status.entities if e.kind == "port"}
    assert ports == dict.fromkeys(fabric.faulty_ports, "warning")
    assert status.counts["link"] == {"critical": 1, "ok": len(fabric.topology.links) - 1}
    assert status.counts["host"] == {"ok": len(fabric.topology.hosts)}
    busiest = status.top_utilisation[0]
    assert busiest.util is not None and 0 < busiest.util <= 1
    assert len(status.top_utilisation) == 5


def test_status_without_topology_and_a_silent_switch(store: Any) -> None:
    fabric = write_fabric(store, duration_s=120, fault_after_s=60)
    late = fabric.end_ns + 300 * NS
    ts = np.arange(fabric.end_ns + NS, late + 1, 10 * NS)
    store.insert_samples(batch([("leaf1", "Ethernet1", "if_in_octets", -1, ts,
                                 np.arange(len(ts)) * 1e6, 0)]))
    q = Query(store, spine_leaf(2, 4, 2), options=StatusOptions(silent_after_s=3600))
    status = q.status()
    nodata = sorted(e.entity for e in status.entities if e.level == "nodata")
    assert nodata == ["leaf2", "leaf3", "leaf4", "spine1", "spine2"]
    assert Query(store).topology_view().known is False
    assert "leaf3" in Query(store).topology_view().devices
