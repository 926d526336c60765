"""gnmic's Kafka output in ``event`` format, as a collector: a site that already runs gnmic points
one of its outputs at a topic and rocewatch reads it.

Each Kafka message holds a JSON array of events (one per update of a SubscribeResponse) or, with
gnmic's ``split-events``, one event object::

    {"name": "sub1", "timestamp": 1700000000000000000,
     "tags": {"interface_name": "Ethernet0", "source": "leaf1:57400", "subscription-name": "sub1"},
     "values": {"/interfaces/interface/state/counters/in-octets": "123"}}

``values`` keys are paths without their keys (an ``origin:`` in front, module-qualified element
names possible); the keys travel as tags named ``<element>_<key>`` (the name after any module
prefix), or ``<path>_<element>_<key>`` when two elements of a path would give the same tag. The
decoder puts the keys back onto the elements and resolves the path with the same vendor profile
and :class:`~collectors.gnmi.mapping.PathMapper` the gNMI collector uses, so an event and a gNMI
update
of the same leaf become the same catalog sample. Values arrive as JSON numbers, RFC 7951 strings
(``"123"``) or enum names (``"UP"``).

A message that is not gnmic event JSON goes to the dead-letter topic with its origin and the
reason, under the wire's one policy (:mod:`pipeline.wire.deadletter`); paths the profile does not
map are counted, not dead-lettered. Offsets are committed only after the
samples were handed on and the producer behind ``emit`` (the runner's) flushed them.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Mapping
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from collectors.base import Collector, Emit
from collectors.gnmi.mapping import IGNORED, UNKNOWN, PathMapper, canonical
from collectors.profile import GnmiProfile, load_profile
from pipeline.bus.base import Topics
from pipeline.config import BusSettings, KafkaSettings
from pipeline.errors import BusError, ConfigError, DecodeError
from pipeline.model import BatchBuilder
from pipeline.retry import REPOLL, Backoff
from pipeline.times import MAX_INSTANT_NS
from pipeline.wire.deadletter import DeadLetter, DeadLetters
from pipeline.wire.items import parse_json

log = logging.getLogger("rocewatch.collectors.gnmic")

_MODULE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*:")
_PORT_SUFFIX = re.compile(r":\d{1,5}$")


class GnmicKafkaOptions(BaseModel):
    """Where gnmic writes, and how its events map onto devices and metrics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kafka: KafkaSettings = KafkaSettings()
    #: the topic gnmic's Kafka output writes (``format: event``)
    topic: str = "telemetry.raw.gnmic"
    #: consumer group (prefixed with kafka.group_prefix)
    group: str = "gnmic-input"
    #: the vendor profile whose paths the events carry
    profile: str = "openconfig"
    profile_dirs: tuple[str, ...] = ()
    #: the tag that names the device: gnmic's meta tag ``source`` (the target's name or address)
    device_tag: str = "source"
    #: drop a ``:port`` suffix from the device name (``leaf1:57400`` → ``leaf1``)
    strip_port: bool = True
    #: dead letters go to ``<topic_prefix>deadletter``, the platform's dead-letter topic
    topic_prefix: str = "rocewatch."
    poll_wait_s: float = Field(0.5, gt=0)


def _element(name: str) -> str:
    return _MODULE.sub("", name, count=1) if ":" in name else name


class EventDecoder:
    """gnmic event JSON → rows of a :class:`BatchBuilder`, through a profile's mapper."""

    def __init__(self, mapper: PathMapper, device_tag: str = "source",
                 strip_port: bool = True) -> None:
        self.mapper = mapper
        self.device_tag = device_tag
        self.strip_port = strip_port
        self.events = 0
        self.samples = 0
        self.unmapped: dict[str, int] = {}
        self.bad_values = 0

    def decode(self, data: bytes | None, into: BatchBuilder) -> int:
        """Add the samples of one Kafka message; returns how many. Raises DecodeError when the
        message is not gnmic event JSON (nothing of it is added then)."""
        doc = parse_json(data, "gnmic event message")
        events = doc if isinstance(doc, list) else [doc]
        rows: list[tuple[int, str, str, int, int, float, int]] = []
        for i, event in enumerate(events):
            rows.extend(self._event(event, i))
        for row in rows:
            into.add(*row)
        self.events += len(events)
        self.samples += len(rows)
        return len(rows)

    def _event(self, event: Any, i: int) -> list[tuple[int, str, str, int, int, float, int]]:
        if not isinstance(event, dict):
            raise DecodeError(f"event {i} is a {type(event).__name__}, not an object")
        ts, tags, values = event.get("timestamp"), event.get("tags", {}), event.get("values", {})
        if not isinstance(ts, int) or isinstance(ts, bool) or not 0 < ts < MAX_INSTANT_NS:
            raise DecodeError(f"event {i}: timestamp must be a positive integer (ns) before "
                              "2100")
        if not isinstance(tags, dict) or not isinstance(values, dict):
            raise DecodeError(f"event {i}: tags and values must be objects")
        device = tags.get(self.device_tag)
        if not isinstance(device, str) or not device:
            raise DecodeError(f"event {i}: no {self.device_tag!r} tag names the device")
        if self.strip_port:
            device = _PORT_SUFFIX.sub("", device)
        out = []
        for path, raw in values.items():
            sid = self.mapper.resolve(self.canonical_path(path, tags))
            if sid == IGNORED:
                continue
            if sid == UNKNOWN:
                self.unmapped[path] = self.unmapped.get(path, 0) + 1
                continue
            spec = self.mapper.specs[sid]
            value = _number(raw, spec.enum)
            # as the gNMI decoder reads values: finite, and a counter never negative
            if value is None or not math.isfinite(value) or (
                    value < 0 and self.mapper.is_counter(sid)):
                self.bad_values += 1
                continue
            out.append((ts, device, spec.port, spec.metric, spec.qual, value * spec.scale,
                        spec.flags))
        return out

    @staticmethod
    def canonical_path(path: str, tags: Mapping[str, Any]) -> str:
        """A gnmic value path plus its key tags → the mapper's canonical path text."""
        if not path.startswith("/") and ":" in path.split("/", 1)[0]:
            path = path.split(":", 1)[1]  # origin
        names = [_element(n) for n in path.strip("/").split("/") if n]
        elems: list[tuple[str, dict[str, str]]] = [(n, {}) for n in names]
        first = {n: i for i, n in reversed(list(enumerate(names)))}
        last = {n: i for i, n in enumerate(names)}
        for tag, value in tags.items():
            head, sep, key = tag.rpartition("_")
            if not sep or not head or not key or not isinstance(value, str):
                continue
            # "<path>_<element>_<key>" is gnmic's name when the element's plain tag was taken:
            # the key of the later of two same-named elements
            index = (last.get(head.rpartition("_")[2]) if head.startswith("/")
                     else first.get(head))
            if index is not None:
                elems[index][1].setdefault(key, value)
        return canonical(elems)


def _number(raw: Any, enum: Mapping[str, int] | None) -> float | None:
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, (int, float)):
        try:
            return float(raw)
        except OverflowError:  # an integer past any float
            return None
    if isinstance(raw, str):
        try:
            return float(int(raw))
        except OverflowError:
            return None
        except ValueError:
            pass
        if enum is not None:
            found = enum.get(_element(raw).lower())
            return float(found) if found is not None else None
        try:
            return float(raw)
        except ValueError:
            return None
    return None


class GnmicKafkaCollector(Collector):
    """Consumes gnmic ``event`` messages from Kafka and emits them as per-device batches."""

    name = "gnmic_kafka"
    Options = GnmicKafkaOptions

    def __init__(self, instance: str, options: GnmicKafkaOptions, *, emit: Emit) -> None:
        super().__init__(instance, options, emit=emit)
        profile = load_profile(options.profile, options.profile_dirs)
        if not isinstance(profile, GnmiProfile):
            raise ConfigError(f"profile {options.profile!r} is not a gNMI profile", "profile")
        self.opts = options
        self.decoder = EventDecoder(PathMapper(profile), options.device_tag, options.strip_port)
        self.dead_letters = 0
        self.commit_failures = 0

    def _flush_emitted(self) -> None:
        """Make what was emitted durable before its offsets are committed (the runner's emit
        carries its producer)."""
        producer = getattr(self.emit, "producer", None)
        if producer is not None:
            producer.flush()

    def run(self, stop: threading.Event) -> None:
        from pipeline.bus.kafka import KafkaBus

        o = self.opts
        topics = Topics(o.topic_prefix)
        bus = KafkaBus(BusSettings(kind="kafka", kafka=o.kafka))
        bus.ensure_topics([o.topic, topics.deadletter])
        consumer = bus.consumer([o.topic], o.group)
        parked = bus.producer()
        letters = DeadLetters(o.group, parked, topics.deadletter)
        builder = BatchBuilder()
        decode = partial(self.decoder.decode, into=builder)
        polls = Backoff(REPOLL)
        self.started.set()
        try:
            while not stop.is_set():
                try:
                    msgs = consumer.poll(timeout_s=o.poll_wait_s, max_records=1000)
                except BusError as exc:
                    delay = polls.fail()
                    if delay is None:
                        raise
                    log.error("%s: cannot poll %s (will retry in %.1fs): %s", self.instance,
                              o.topic, delay, exc)
                    stop.wait(delay)
                    continue
                polls.succeed()
                if not msgs:
                    continue
                for msg in msgs:
                    if isinstance(letters.read(msg, decode), DeadLetter):
                        self.dead_letters += 1
                if len(builder):
                    self.emit(builder.build())
                self._flush_emitted()
                letters.flush()
                try:
                    consumer.commit()
                except BusError as exc:  # redelivered later; the store collapses repeats
                    self.commit_failures += 1
                    log.warning("%s: offsets not committed: %s", self.instance, exc)
        finally:
            consumer.close()
            parked.close()
            bus.close()

    def health(self) -> dict[str, Any]:
        d = self.decoder
        return {"collector": self.name, "instance": self.instance, "events": d.events,
                "samples": d.samples, "unmapped_paths": dict(d.unmapped),
                "bad_values": d.bad_values, "dead_letters": self.dead_letters,
                "commit_failures": self.commit_failures}
