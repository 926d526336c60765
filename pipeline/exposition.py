"""The process's own metrics for Prometheus: one registry per process, the one way a stage
declares what it measures, and the ``/metrics`` endpoint that serves them.

Every loop finds a :class:`Metrics` in its stage context (``ctx.metrics``) and declares its
metrics there: counters, gauges and histograms it updates as it works (:meth:`Metrics.counter`,
:meth:`Metrics.gauge`, :meth:`Metrics.histogram`; declaring one again returns the same one, so a
loop restarted by its supervisor goes on counting), or families read at scrape time from what it
already keeps (:meth:`Metrics.collect`: a restarted loop's source replaces the old one's, under
the same key; :meth:`Metrics.stats` turns a flat snapshot of numbers into counters and gauges).
The front door adds what it sees of every loop: supervision, and the lag of every consumer of
the bus (:class:`MeteredBus`).

Names follow Prometheus's conventions: ``rocewatch_<stage>_<what>_<unit>``, base units
(``_seconds``, ``_bytes``), counters ending in ``_total`` (written without it here: the client
adds it), labels for what varies (``group``, ``topic``, ``partition``, ``receiver``, ``route``).
One process serves one registry: on ``metrics.listen`` (:class:`MetricsServer`), and on the API's
own port when the process runs the api role.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest, start_http_server
from prometheus_client.registry import Collector, CollectorRegistry

from pipeline.bus.base import Bus, Consumer, Producer
from pipeline.errors import ConfigError

_NAME = re.compile(r"^rocewatch_[a-z]+_[a-z0-9_]+$")
#: latency buckets (seconds) for work that takes milliseconds to a minute
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                   30.0, 60.0)

Families = Callable[[], Iterable[Metric]]
Kind = Literal["counter", "gauge"]


def check_name(name: str, counter: bool = False) -> str:
    """A metric name of ours, or a ConfigError (a bug in the stage that declares it)."""
    if not _NAME.match(name):
        raise ConfigError(f"metric {name!r} is not named rocewatch_<stage>_<what>_<unit>")
    if counter and name.endswith("_total"):
        raise ConfigError(f"counter {name!r}: name it without _total (the client adds it)")
    return name


class _Scraped(Collector):
    """The families read at scrape time, by key."""

    def __init__(self) -> None:
        self.sources: dict[str, Families] = {}
        self.lock = threading.Lock()

    def collect(self) -> Iterable[Metric]:
        with self.lock:
            sources = list(self.sources.values())
        for source in sources:
            try:
                yield from source()
            except Exception:  # a broken source must not take the others' metrics down
                continue


class Metrics:
    """One process's metrics (module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._made: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._scraped = _Scraped()
        self.registry.register(self._scraped)

    def _make(self, kind: type[Any], name: str, doc: str, labels: Sequence[str],
              **extra: Any) -> Any:
        check_name(name, counter=kind is Counter)
        with self._lock:
            made = self._made.get(name)
            if made is None:
                made = self._made[name] = kind(name, doc, list(labels), registry=self.registry,
                                               **extra)
            elif not isinstance(made, kind):
                raise ConfigError(f"metric {name!r} is declared as two kinds")
            return made

    def counter(self, name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
        result: Counter = self._make(Counter, name, doc, labels)
        return result

    def gauge(self, name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
        result: Gauge = self._make(Gauge, name, doc, labels)
        return result

    def histogram(self, name: str, doc: str, labels: Sequence[str] = (),
                  buckets: Sequence[float] = LATENCY_BUCKETS) -> Histogram:
        result: Histogram = self._make(Histogram, name, doc, labels, buckets=tuple(buckets))
        return result

    def collect(self, key: str, families: Families) -> None:
        """Families read at scrape time; a later source under the same key replaces this one."""
        with self._scraped.lock:
            self._scraped.sources[key] = families

    def forget(self, key: str) -> None:
        with self._scraped.lock:
            self._scraped.sources.pop(key, None)

    def stats(self, key: str, stage: str, read: Callable[[], Mapping[str, Any]],
              kinds: Mapping[str, tuple[Kind, str]], labels: Mapping[str, str] | None = None,
              ) -> None:
        """Numbers a loop already keeps as counters and gauges read at scrape time:
        ``kinds`` maps a field of ``read()`` to (kind, help); the metric is
        ``rocewatch_<stage>_<field>`` (``_total`` added for a counter)."""
        names = {field: check_name(f"rocewatch_{stage}_{field}", kind == "counter")
                 for field, (kind, _) in kinds.items()}
        label_names = list(labels or {})
        label_values = list((labels or {}).values())

        def families() -> Iterable[Metric]:
            snapshot = read()
            for field, (kind, doc) in kinds.items():
                value = snapshot.get(field)
                if value is None:
                    continue
                family = (CounterMetricFamily if kind == "counter" else
                          GaugeMetricFamily)(names[field], doc, labels=label_names)
                family.add_metric(label_values, float(value))
                yield family

        self.collect(key, families)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def parse_listen(listen: str, where: str = "metrics.listen") -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"want host:port, not {listen!r}", where)
    return host.strip("[]"), int(port)


class MetricsServer:
    """``/metrics`` of a registry over HTTP on ``host:port`` (port 0: any free port)."""

    def __init__(self, metrics: Metrics, listen: str) -> None:
        self.host, self.port = parse_listen(listen)
        self.metrics = metrics
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> MetricsServer:
        try:
            self._server, self._thread = start_http_server(self.port, self.host,
                                                           registry=self.metrics.registry)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {self.host}:{self.port}: {exc.strerror}",
                              "metrics.listen") from None
        self.port = int(self._server.server_address[1])
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(5.0)
            self._server = None


# -- the bus: every consumer's lag --------------------------------------------------------------

class MeteredBus:
    """A bus that reports the lag of every consumer it hands out, per group and partition
    (``rocewatch_bus_consumer_lag_messages``), read at scrape time from the consumer's own
    ``lag()`` (what its partitions hold past its position, as of its last poll)."""

    def __init__(self, bus: Bus, metrics: Metrics) -> None:
        self.bus = bus
        self._consumers: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        metrics.collect("bus", self._families)

    def ensure_topics(self, topics: Sequence[str]) -> None:
        self.bus.ensure_topics(topics)

    def producer(self) -> Producer:
        return self.bus.producer()

    def consumer(self, topics: Sequence[str], group: str) -> Consumer:
        consumer = self.bus.consumer(topics, group)
        with self._lock:
            self._consumers[consumer] = group
        return consumer

    def close(self) -> None:
        self.bus.close()

    def _families(self) -> Iterable[Metric]:
        lag = GaugeMetricFamily("rocewatch_bus_consumer_lag_messages",
                                "messages a consumer group's member has still to read, per "
                                "partition", labels=["group", "topic", "partition"])
        with self._lock:
            members = list(self._consumers.items())
        for consumer, group in members:
            read = getattr(consumer, "lag", None)
            try:
                behind = dict(read()) if read is not None else {}
            except Exception:  # a consumer closing under the scrape: it has nothing to say
                continue
            for (topic, partition), count in sorted(behind.items()):
                lag.add_metric([group, topic, str(partition)], float(count))
        yield lag
