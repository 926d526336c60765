"""Issue 15.2: every role's metrics on one Prometheus endpoint per process, scraped over HTTP.

Each role runs in a platform of its own (as in a split deployment) against the real Kafka broker
and ClickHouse server, is given work, and its ``/metrics`` (on ``metrics.listen``, and the API's
own port for the api role) is scraped and parsed with the Prometheus client's parser: the
supervision of its loop, the lag of its consumers per partition, and what an SRE pages on for
that stage."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pipeline.bus.base import Topics
from pipeline.kinds import FAULTY_LINK
from pipeline.model import Alert, Severity
from pipeline.wire.alerts import encode_alerts
from pipeline.wire.publish import publish_batches
from rocewatch.app import Platform
from rocewatch.settings import Settings
from tests.conftest import clickhouse_settings
from tests.pipeline.conftest import make_batch

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NS = 1_000_000_000
Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(url: str) -> Samples:
    """Every sample of an exposition, by sample name (counters keep ``_total``)."""
    response = httpx.get(url, timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The one sample of ``name`` whose labels include ``labels``."""
    found = [v for have, v in samples.get(name, []) if labels.items() <= have.items()]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def wait_for(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


@pytest.fixture
def split(kafka_settings: Any, clickhouse_address: Any, unique_name: Any) -> Iterator[Any]:
    """``start(role, **settings)``: a platform of one role on the test broker and server, with
    ``/metrics`` on a port of its own; stopped afterwards."""
    prefix = unique_name("m") + "."
    database = unique_name("db")
    running: list[Platform] = []

    def start(role: str, **extra: Any) -> Platform:
        settings = Settings(**{
            "site": "lab1", "bus": kafka_settings.model_copy(update={"topic_prefix": prefix}),
            "store": clickhouse_settings(clickhouse_address, database),
            "api": {"port": 0}, "metrics": {"listen": "127.0.0.1:0"},
            "remediation": {"receivers": [], "state_path": ""}, **extra})
        platform = Platform(settings, (role,))
        running.append(platform)
        platform.start()
        return platform

    start.topics = Topics(prefix)  # type: ignore[attr-defined]
    yield start
    for platform in running:
        platform.stop()


def loop_ok(samples: Samples, role: str) -> None:
    assert value(samples, "rocewatch_loop_up", loop=role) == 1.0
    assert value(samples, "rocewatch_loop_restarts_total", loop=role) == 0.0
    assert value(samples, "rocewatch_loop_crash_looping", loop=role) == 0.0


def lag_of(samples: Samples, group: str) -> dict[tuple[str, str], float]:
    return {(labels["topic"], labels["partition"]): v
            for labels, v in samples.get("rocewatch_bus_consumer_lag_messages", [])
            if labels["group"] == group}


def produce(split: Any, kafka_settings: Any, batches: list[Any] | None = None,
            alerts: list[Alert] | None = None) -> int:
    from pipeline.bus.kafka import KafkaBus

    topics = split.topics
    bus = KafkaBus(kafka_settings.model_copy(update={"topic_prefix": topics.prefix}))
    bus.ensure_topics(topics.all())
    producer = bus.producer()
    sent = publish_batches(producer, topics, batches or [])
    if alerts:
        producer.send(topics.alerts, encode_alerts(alerts), key=b"detect")
    producer.flush(60)
    producer.close()
    bus.close()
    return sent


def test_the_ingest_role_is_scraped(split: Any, kafka_settings: Any) -> None:
    platform = split("ingest")
    batch = make_batch(devices=3, ports=2, seconds=30)
    produce(split, kafka_settings, [batch])
    assert platform.metrics_server is not None
    url = platform.metrics_server.url
    samples = wait_for(lambda: (s := scrape(url)).get("rocewatch_ingest_samples_total")
                       and value(s, "rocewatch_ingest_samples_total") == len(batch) and s,
                       90, "ingest to store the batch")
    loop_ok(samples, "ingest")
    assert value(samples, "rocewatch_ingest_insert_duration_seconds_count") >= 1
    assert value(samples, "rocewatch_ingest_insert_duration_seconds_sum") > 0
    assert value(samples, "rocewatch_ingest_out_of_window_total") == 0
    lag = lag_of(samples, "ingest")
    samples_topic = split.topics.samples
    assert {p for t, p in lag if t == samples_topic} == {"0", "1", "2", "3"}
    assert all(v == 0 for v in lag.values())  # all read
    assert "rocewatch_rollup_runs_total" in samples


def test_the_detect_role_is_scraped(split: Any, kafka_settings: Any) -> None:
    platform = split("detect")
    batch = make_batch(devices=2, ports=2, seconds=30)
    produce(split, kafka_settings, [batch])
    url = platform.metrics_server.url
    samples = wait_for(lambda: (s := scrape(url)).get("rocewatch_detect_samples_total")
                       and value(s, "rocewatch_detect_samples_total") == len(batch)
                       and value(s, "rocewatch_detect_step_duration_seconds_count") >= 1 and s,
                       90, "detect to judge the batch")
    loop_ok(samples, "detect")
    assert value(samples, "rocewatch_detect_step_duration_seconds_sum") > 0
    assert value(samples, "rocewatch_detect_event_time_seconds") == \
        pytest.approx(int(batch.ts_ns.max()) / NS)
    assert value(samples, "rocewatch_detect_series") > 0
    assert lag_of(samples, "detect")


def test_the_remediate_role_is_scraped(split: Any, kafka_settings: Any) -> None:
    platform = split("remediate", remediation={
        "state_path": "", "receivers": [{"type": "webhook", "name": "oncall",
                                         "url": "http://127.0.0.1:1/hook", "attempts": 1}],
        "route": {"group_wait": "0s"}, "clock": {"tick": 0.05}})
    now = time.time_ns()
    incident = Alert(name=FAULTY_LINK, entity="leaf1~spine1", severity=Severity.CRITICAL,
                     starts_ns=now, updated_ns=now, source="correlator")
    produce(split, kafka_settings, [make_batch(devices=1, ports=1, seconds=5)], [incident])
    url = platform.metrics_server.url
    samples = wait_for(
        lambda: (s := scrape(url)).get("rocewatch_remediate_notifications_total") and s, 90,
        "a notification to fail")
    loop_ok(samples, "remediate")
    assert value(samples, "rocewatch_remediate_notifications_total", receiver="oncall",
                 outcome="failed") >= 1
    assert value(samples, "rocewatch_remediate_open_incidents") == 1
    assert value(samples, "rocewatch_remediate_actions_total", action="notify",
                 outcome="failed") >= 1
    assert value(samples, "rocewatch_remediate_halted") == 0
    assert lag_of(samples, "remediation") or lag_of(samples, "remediate")


def test_the_api_role_is_scraped_on_its_own_port_too(split: Any) -> None:
    platform = split("api")
    api = wait_for(lambda: platform.health().get("api", {}).get("url"), 60, "the API")
    for _ in range(3):
        assert httpx.get(f"{api}/v1/clock", timeout=30).status_code == 200
    refused = httpx.get(f"{api}/v1/series", params={"metric": "nope"}, timeout=30).status_code
    assert 400 <= refused < 500
    httpx.get(f"{api}/no/such/path", timeout=30)
    for url in (f"{api}/metrics", platform.metrics_server.url):
        samples = scrape(url)
        loop_ok(samples, "api")
        assert value(samples, "rocewatch_api_request_duration_seconds_count", route="/v1/clock",
                     method="GET", code="200") >= 3
        assert value(samples, "rocewatch_api_request_duration_seconds_count",
                     route="/v1/series", code=str(refused)) == 1
        # what the gate refuses (an unknown path) is its own count, never a route label
        assert {labels["route"] for labels, _ in
                samples["rocewatch_api_request_duration_seconds_count"]} <= \
            {"/v1/clock", "/v1/series", "/metrics"}
    assert "/metrics" not in httpx.get(f"{api}/openapi.json", timeout=30).json()["paths"]


def test_the_collect_role_is_scraped(split: Any, kafka_settings: Any, unique_name: Any) -> None:
    from pipeline.bus.kafka import KafkaBus

    raw = unique_name("gnmic")
    platform = split("collect", collectors=[{
        "type": "gnmic_kafka", "name": "gnmic", "topic": raw,
        "topic_prefix": split.topics.prefix, "kafka": kafka_settings.kafka.model_dump()}])
    bus = KafkaBus(kafka_settings)
    bus.ensure_topics([raw])
    producer = bus.producer()
    event = {"name": "sub", "timestamp": time.time_ns(),
             "tags": {"source": "leaf1:57400", "interface_name": "Ethernet0"},
             "values": {"/interfaces/interface/state/counters/in-octets": "123"}}
    producer.send(raw, json.dumps([event]).encode(), key=b"leaf1")
    producer.flush(60)
    producer.close()
    bus.close()
    url = platform.metrics_server.url
    samples = wait_for(lambda: (s := scrape(url)).get("rocewatch_collect_samples_total")
                       and value(s, "rocewatch_collect_samples_total") == 1 and s,
                       90, "the collector to publish the event")
    loop_ok(samples, "collect")
    assert value(samples, "rocewatch_collect_batches_total") == 1
