"""Per-target collector health as a Prometheus ``/metrics`` endpoint.

The numbers are the ones the collectors also publish as samples (see :mod:`collectors.health`),
read at scrape time from each collector's ``health()``: whether the target is up and connected,
the age of its last update, updates per second, samples expected and received in the last
interval, and errors by kind. Label ``target`` is the inventory name; ``collector`` the instance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import start_http_server
from prometheus_client.registry import Collector as PromCollector
from prometheus_client.registry import CollectorRegistry

from pipeline.errors import ConfigError
from pipeline.exposition import Metrics

HealthSource = Callable[[], dict[str, Any]]
_LABELS = ["collector", "target", "protocol", "profile"]

_GAUGES = (
    ("up", "1 while the target delivers data", lambda s: float(bool(s["up"]))),
    ("connected", "1 while a session to the target is open", lambda s: float(bool(s["connected"]))),
    ("last_update_age_seconds", "seconds since the target last sent data",
     lambda s: s["last_update_age_s"]),
    ("updates_per_second", "samples per second over the last interval",
     lambda s: s["updates_per_s"]),
    ("expected_samples", "samples the target should send per interval", lambda s: s["expected"]),
    ("received_samples", "samples the target sent in the last interval", lambda s: s["received"]),
    ("device_clock", "1 when sample times come from the device's clock",
     lambda s: float(s["clock"] == "device")),
)
_COUNTERS = (
    ("samples", "samples decoded from the target", lambda s: s["samples_total"]),
    ("connects", "sessions opened to the target", lambda s: s["connects"]),
)


class HealthFamilies(PromCollector):
    """Turns collectors' health snapshots into metric families at scrape time."""

    def __init__(self, sources: Sequence[HealthSource]) -> None:
        self.sources = list(sources)

    def collect(self) -> Iterator[Metric]:
        snapshots = [source() for source in self.sources]
        gauges = {name: GaugeMetricFamily(f"rocewatch_collector_{name}", doc, labels=_LABELS)
                  for name, doc, _ in _GAUGES}
        counters = {name: CounterMetricFamily(f"rocewatch_collector_{name}", doc,
                                              labels=_LABELS) for name, doc, _ in _COUNTERS}
        errors = CounterMetricFamily("rocewatch_collector_errors",
                                     "bad input and protocol errors from the target, by kind",
                                     labels=[*_LABELS, "kind"])
        for snap in snapshots:
            for target, state in snap.get("targets", {}).items():
                labels = [snap.get("instance", ""), target, state["protocol"], state["profile"]]
                for name, _, read in _GAUGES:
                    value = read(state)
                    if value is not None:
                        gauges[name].add_metric(labels, float(value))
                for name, _, read in _COUNTERS:
                    counters[name].add_metric(labels, float(read(state)))
                for kind, count in sorted(state["errors"].items()):
                    errors.add_metric([*labels, kind], float(count))
        yield from gauges.values()
        yield from counters.values()
        yield errors


def watch(metrics: Metrics, sources: Sequence[HealthSource], published: HealthSource) -> None:
    """Every instance's per-target health and what the role published, in the process's metrics
    (:mod:`pipeline.exposition`: the one endpoint of the process)."""
    metrics.collect("collect", HealthFamilies(sources).collect)
    metrics.stats("collect.published", "collect", published, {
        "batches": ("counter", "sample batches published to the samples topic"),
        "samples": ("counter", "samples published to the samples topic")})


class HealthEndpoint:
    """An HTTP server on ``host:port`` serving ``/metrics`` for the given health sources."""

    def __init__(self, listen: str, sources: Sequence[HealthSource]) -> None:
        host, _, port = listen.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"metrics_listen must be host:port, not {listen!r}")
        self.host, self.port = host.strip("[]"), int(port)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(HealthFamilies(sources))
        self._server: Any = None
        self._thread: Any = None

    def start(self) -> HealthEndpoint:
        self._server, self._thread = start_http_server(self.port, self.host,
                                                       registry=self.registry)
        self.port = int(self._server.server_address[1])
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5.0)
            self._server = None
