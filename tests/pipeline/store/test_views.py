"""The store's plain-SQL views (pipeline/store/views.py) on every backend: chDB, the ClickHouse
server (18.16) and the cluster. Each has its documented columns; the rates are the rate rule's
(numpy) per minute whether the rollup job has rolled the minute or not; incidents and drains
hold each episode and record once, whatever was delivered twice; clickhouse-client, as an
operator or Grafana would, reads them with nothing but the view's name."""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.kinds import DRAIN, FAULTY_LINK, PFC_STORM, UNDRAIN
from pipeline.metrics import metric_id
from pipeline.model import ActionResult, Alert, BatchBuilder, SampleBatch, Severity
from pipeline.rates.rule import RATED, per_second
from pipeline.store.base import Store
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.sql import floor_to
from pipeline.store.views import PFC_COUNTERS, VIEWS
from tests.pipeline.rate_cases import batch, judged, wild_rows

NS = 1_000_000_000
MINUTE = 60 * NS
HOUR = 3600 * NS
DOCS = Path(__file__).resolve().parents[3] / "docs" / "sql.md"


def view(store: Store, name: str, order: str) -> Any:
    return store.query(f"SELECT * FROM {store.database}.{name} ORDER BY {order}")


def test_every_view_has_its_documented_columns(store: Store) -> None:
    for v in VIEWS:
        got = store.query(f"SELECT * FROM {store.database}.{v.name} LIMIT 0")
        assert list(got) == v.column_names(), v.name
    text = DOCS.read_text()
    for v in VIEWS:  # docs/sql.md names every view and every column
        assert f"### `{v.name}`" in text, v.name
        for column in v.column_names():
            assert f"| `{column}` |" in text.split(f"### `{v.name}`")[1].split("###")[0], column


@pytest.fixture
def wild() -> SampleBatch:
    """Counters with wraps, resets and gaps, one gauge port (not a rate), a few hours ago."""
    base = (time.time_ns() - 4 * HOUR) // HOUR * HOUR
    return batch(wild_rows(seed=5, n=500), base)


def expected_rates(b: SampleBatch) -> dict[tuple[str, int], float]:
    """(port, minute) → the rate rule's per-second rate over the rated intervals ending in the
    minute (NaN where none is rated), for the counters."""
    order, want = judged(b)
    rated = np.isin(want.status, RATED)
    sums: dict[tuple[str, int], list[float]] = {}
    counters = {metric_id("if_in_octets")}
    for i, row in enumerate(order):
        if int(b.metric[row]) not in counters:
            continue
        key = (b.ports[b.port[row]], floor_to(int(b.ts_ns[row]), MINUTE))
        acc = sums.setdefault(key, [0.0, 0.0])
        if rated[i]:
            acc[0] += float(want.increase[i])
            acc[1] += float(want.dt_ns[i])
    return {k: float(per_second(np.array([v[0]]), np.array([v[1]]))[0])
            for k, v in sums.items()}


def port_rates(store: Store) -> dict[tuple[str, int], float]:
    c = view(store, "port_rates", "port, minute_ns")
    assert set(c["metric"]) <= {"if_in_octets"} and set(c["unit"]) <= {"bytes/s"}
    return {(str(p), int(m)): float(r) for p, m, r in zip(c["port"], c["minute_ns"], c["rate"],
                                                            strict=True)}


def same_rates(got: dict[tuple[str, int], float], want: dict[tuple[str, int], float]) -> None:
    assert set(got) == set(want)
    for key, rate in want.items():
        if math.isnan(rate):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(rate, rel=1e-12), key


def test_port_rates_are_the_rate_rules_per_minute_rolled_or_not(store: Store,
                                                                wild: SampleBatch) -> None:
    early = wild.ts_ns < int(wild.ts_ns.min()) + 30 * MINUTE
    store.insert_samples(wild.take(np.flatnonzero(early)))
    job = RollupJob(store, store.settings)
    job.run_once()  # the first half hour's complete minutes rolled ...
    store.insert_samples(wild.take(np.flatnonzero(~early)))  # ... the rest live
    store.insert_samples(wild.take(np.arange(0, len(wild), 7)))  # a partial redelivery
    want = expected_rates(wild)
    assert sum(math.isnan(r) for r in want.values()) > 0  # some minutes have no rate
    assert 0 < job.stats.rolled["samples_1m"] < len({m for _, m in want})
    same_rates(port_rates(store), want)
    job.catch_up(event_ns=int(wild.ts_ns.max()) + 2 * HOUR)  # every minute rolled
    same_rates(port_rates(store), want)


def pfc_batch(start_ns: int, seconds: int = 300) -> SampleBatch:
    """Two ports, priorities 3 and 4, a sample a second: frames received 100/s (priority 3) and
    40/s (4), sent 10/s; paused a quarter of the time at priority 3, pausing a tenth."""
    b = BatchBuilder()
    for port in ("Ethernet0", "Ethernet4"):
        for k in range(seconds):
            t = start_ns + k * NS
            for prio, rx in ((3, 100), (4, 40)):
                b.add(t, "leaf1", port, metric_id(PFC_COUNTERS[0]), prio, float(rx * k), 0)
                b.add(t, "leaf1", port, metric_id(PFC_COUNTERS[1]), prio, float(10 * k), 0)
                b.add(t, "leaf1", port, metric_id(PFC_COUNTERS[2]), prio,
                      float((250_000 if prio == 3 else 0) * k), 0)
                b.add(t, "leaf1", port, metric_id(PFC_COUNTERS[3]), prio, float(100_000 * k), 0)
    return b.build()


def test_pfc_rates_per_priority(store: Store) -> None:
    start = (time.time_ns() - 2 * HOUR) // MINUTE * MINUTE
    store.insert_samples(pfc_batch(start))
    c = view(store, "pfc_rates", "port, priority, minute_ns")
    assert len(c["minute"]) == 2 * 2 * 5  # ports x priorities x minutes
    assert set(c["priority"].tolist()) == {3, 4}
    three = c["priority"] == 3
    assert np.allclose(c["rx_frames_per_s"][three], 100.0)
    assert np.allclose(c["rx_frames_per_s"][~three], 40.0)
    assert np.allclose(c["tx_frames_per_s"], 10.0)
    assert np.allclose(c["rx_paused"][three], 0.25) and np.allclose(c["rx_paused"][~three], 0)
    assert np.allclose(c["tx_pausing"], 0.1)
    RollupJob(store, store.settings).catch_up(event_ns=start + 2 * HOUR)
    again = view(store, "pfc_rates", "port, priority, minute_ns")
    for name in ("rx_frames_per_s", "tx_frames_per_s", "rx_paused", "tx_pausing"):
        assert again[name].tolist() == pytest.approx(c[name].tolist(), rel=1e-12), name


def _alert(name: str, now: int, **kw: Any) -> Alert:
    base: dict[str, Any] = dict(name=name, entity="leaf1:Ethernet0~spine1:Ethernet8",
                                severity=Severity.CRITICAL, ports=("leaf1:Ethernet0",),
                                starts_ns=now, updated_ns=now, confidence=0.9)
    base.update(kw)
    return Alert(**base)


def test_incidents_hold_each_episodes_latest_state(store: Store) -> None:
    now = (time.time_ns() // NS - 600) * NS
    link = _alert(FAULTY_LINK, now, explains=("a", "b"))
    resolved = _alert(FAULTY_LINK, now, updated_ns=now + 60 * NS, ends_ns=now + 60 * NS,
                      explains=("a", "b"))
    again = _alert(FAULTY_LINK, now + 300 * NS)  # the same link fires again: a second episode
    storm = _alert(PFC_STORM, now + 10 * NS, entity="host5")
    symptom = _alert("fcs_errors", now, root_cause=False, entity="leaf1:Ethernet0")
    store.insert_alerts([link, storm, symptom])
    store.insert_alerts([link, resolved, again, storm])  # some delivered twice
    c = view(store, "incidents", "started_ns, kind")
    rows = list(zip(c["kind"], c["entity"], c["status"], c["started_ns"].tolist(),
                    c["ended_ns"].tolist(), c["symptoms"].tolist(), strict=True))
    assert rows == [
        (FAULTY_LINK, link.entity, "resolved", now, now + 60 * NS, 2),
        (PFC_STORM, "host5", "firing", now + 10 * NS, 0, 0),
        (FAULTY_LINK, link.entity, "firing", now + 300 * NS, 0, 0),
    ]
    assert list(c["fingerprint"]) == [link.fingerprint, storm.fingerprint, link.fingerprint]
    # the time axis columns, asked as a dashboard would: NULL while an incident lasts
    times = store.query(
        f"SELECT countIf(ended IS NULL) AS open, "
        f"countIf(ended = toDateTime({(now + 60 * NS) // NS}, 'UTC')) AS closed, "
        f"countIf(toUInt32(started) * {NS} = started_ns) AS axis "
        f"FROM {store.database}.incidents")
    assert (int(times["open"][0]), int(times["closed"][0]), int(times["axis"][0])) == (2, 1, 3)


def test_drains_hold_the_runbooks_records_once(store: Store) -> None:
    now = (time.time_ns() // NS - 600) * NS
    drained = ActionResult(id="run1.1", action=DRAIN, target="leaf1:Ethernet0~spine1:Ethernet8",
                           alert_name=FAULTY_LINK, mode="auto", outcome="done", at_ns=now,
                           detail="[drained] port disabled")
    undrained = ActionResult(id="run1.2", action=UNDRAIN, target=drained.target,
                             alert_name=FAULTY_LINK, mode="auto", outcome="done",
                             at_ns=now + 120 * NS)
    notified = ActionResult(action="notify", target="pagerduty", outcome="done", at_ns=now)
    store.insert_actions([drained, notified])
    store.insert_actions([drained, undrained])
    c = view(store, "drains", "at_ns")
    assert list(zip(c["action"], c["target"], c["outcome"], c["at_ns"].tolist(), strict=True)) \
        == [(DRAIN, drained.target, "done", now), (UNDRAIN, drained.target, "done",
                                                   now + 120 * NS)]
    assert list(c["id"]) == ["run1.1", "run1.2"]
    assert list(c["detail"]) == ["[drained] port disabled", ""]


def test_clickhouse_client_reads_the_views_by_name(clickhouse_store: Store) -> None:
    """What Grafana's data source or an operator's shell sends: a SELECT naming the view."""
    client = shutil.which("clickhouse-client")
    if client is None:
        pytest.skip("clickhouse-client is not installed (apt-get install clickhouse-client)")
    store = clickhouse_store
    start = (time.time_ns() - 2 * HOUR) // MINUTE * MINUTE
    store.insert_samples(pfc_batch(start, seconds=120))
    ch = store.settings.clickhouse
    out = subprocess.run(
        [client, "--host", ch.host, "--port", str(ch.port), "--database", store.database,
         "--query", "SELECT port, priority, count() AS minutes, round(avg(rx_paused), 3) "
                    "FROM pfc_rates GROUP BY port, priority ORDER BY port, priority "
                    "FORMAT TabSeparated"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["Ethernet0\t3\t2\t0.25", "Ethernet0\t4\t2\t0",
                                "Ethernet4\t3\t2\t0.25", "Ethernet4\t4\t2\t0"]
