"""The lossless buffer and PFC configuration of every gNMI target, read with gNMI Get.

Counters show a lowered XOFF only once bursts reach it; the configuration shows it at any load.
This collector (plugin ``gnmi_buffer_config``, beside the streaming ``gnmi`` collector, over the
same inventory) reads each switch's lossless thresholds every ``every_intervals`` of its sample
intervals (device time; one by default, so a changed threshold is known within an interval: a
reading is three small Gets, sent at once, a few hundred bytes each — at the reference fabric's
928 switches and 10 s cadence, under 300 Gets a second) and hands them on as device-level
samples (port ``""``), so detection compares them as data
(:mod:`detectors.rules.buffer_config_diff`):

=====================  =========  ===========================================================
metric                 qualifier  read from
=====================  =========  ===========================================================
``pfc_xoff_bytes``     priority   the lossless buffer profile's XOFF threshold
``pfc_xon_bytes``      priority   its XON threshold
``pfc_headroom_bytes`` priority   its headroom
``ecn_kmin_bytes``     queue      the RED/ECN profile's minimum threshold (the queue the
``ecn_kmax_bytes``     queue      lossless priority rides, queues indexed by priority)
=====================  =========  ===========================================================

Paths per dialect (``docs/telemetry-dialects.md``, "Lossless buffer and PFC configuration"),
chosen by the target's profile origin:

* ``openconfig`` origin: ``/qos/buffer/buffer-profiles/buffer-profile/config`` (every profile;
  ``priority``, ``xoff``, ``xon``, ``headroom``: Enterprise SONiC's ``openconfig-qos-buffer``)
  and ``/qos/queue-management-profiles/queue-management-profile/wred/uniform/config``
  (``min-threshold``, ``max-threshold``);
* SONiC (origin empty, ``CONFIG_DB``): ``BUFFER_PROFILE/*`` profiles named ``*lossless*``
  (``xoff``, ``xon``, ``size``), ``PORT_QOS_MAP/*`` (``pfc_enable``: the lossless priorities) and
  ``WRED_PROFILE/*`` (``green_min_threshold``, ``green_max_threshold``).

A target that answers none of them (another dialect, or a device without the model) is asked
again only rarely and says so once in the log; SNMP has no standard MIB for buffer thresholds.
Samples carry the device's timestamp from the Get response. Errors never stop the collector: a
target that fails is retried under :mod:`pipeline.retry`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import grpc
from pydantic import Field
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.base import Collector, CollectorOptions, Emit, load_targets, summarize
from collectors.gnmi.channel import metadata, open_channel
from collectors.profile import GnmiProfile, load_profile
from pipeline.inventory import Target, resolve_secrets
from pipeline.metrics import metric_id
from pipeline.model import BatchBuilder
from pipeline.retry import Backoff, RetryPolicy

log = logging.getLogger("rocewatch.collectors.gnmi.buffer_config")

GET = "/gnmi.gNMI/Get"
_OC_PROFILE = ("qos", "buffer", "buffer-profiles", "buffer-profile", "config")
_OC_WRED = ("qos", "queue-management-profiles", "queue-management-profile", "wred", "uniform",
            "config")
_OC_LEAVES = {"xoff": "pfc_xoff_bytes", "xon": "pfc_xon_bytes", "headroom": "pfc_headroom_bytes"}
_SONIC_LEAVES = {"xoff": "pfc_xoff_bytes", "xon": "pfc_xon_bytes", "size": "pfc_headroom_bytes"}
#: a target that answered none of the paths is asked again this many times less often
_UNSUPPORTED_BACKOFF = 30.0


class BufferConfigOptions(CollectorOptions):
    #: read each target's configuration every this many of its sample intervals (device time)
    every_intervals: float = Field(1.0, gt=0)
    timeout_s: float = Field(5.0, gt=0)


Reading = dict[tuple[str, int], float]  # (metric, priority or queue) → value


def _path(elems: tuple[str, ...], target: str = "") -> pb.Path:
    return pb.Path(elem=[pb.PathElem(name=e) for e in elems], target=target)


def _sonic(key: str) -> pb.Path:
    table, _, entry = key.partition("/")
    return pb.Path(elem=[pb.PathElem(name=table), pb.PathElem(name=entry)])


def requests(origin: str) -> list[pb.GetRequest]:
    """The Get requests of a dialect (one per path, so one unknown path fails only itself)."""
    if origin == "openconfig":
        return [pb.GetRequest(prefix=pb.Path(origin="openconfig"), path=[_path(p)],
                              type=pb.GetRequest.CONFIG, encoding=pb.JSON_IETF)
                for p in (_OC_PROFILE, _OC_WRED)]
    return [pb.GetRequest(prefix=pb.Path(target="CONFIG_DB"), path=[_sonic(key)],
                          encoding=pb.JSON_IETF)
            for key in ("BUFFER_PROFILE/*", "PORT_QOS_MAP/*", "WRED_PROFILE/*")]


def _leaves(note: pb.Notification) -> Iterator[tuple[list[tuple[str, dict[str, str]]], Any]]:
    """Every leaf of a notification as (path elements with keys, value), JSON trees walked."""
    base = [(e.name, dict(e.key)) for e in note.prefix.elem]
    for update in note.update:
        path = base + [(e.name, dict(e.key)) for e in update.path.elem]
        val = update.val
        kind = val.WhichOneof("value")
        if kind in ("json_ietf_val", "json_val"):
            yield from _walk(path, json.loads(getattr(val, kind) or b"null"))
        elif kind is not None:
            yield path, getattr(val, kind)


def _walk(path: list[tuple[str, dict[str, str]]], value: Any
          ) -> Iterator[tuple[list[tuple[str, dict[str, str]]], Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk([*path, (k.rpartition(":")[2], {})], v)
    else:
        yield path, value


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def parse_openconfig(profiles: list[pb.Notification], wred: list[pb.Notification]) -> Reading:
    """Thresholds from OpenConfig-style buffer profiles (by their ``priority``) and RED
    profiles (applied to the lossless priorities' queues)."""
    by_profile: dict[str, dict[str, Any]] = {}
    for note in profiles:
        for path, value in _leaves(note):
            names = [n for n, _ in path]
            if "buffer-profile" not in names:
                continue
            key = next((k.get("name", "") for n, k in path if n == "buffer-profile"), "")
            by_profile.setdefault(key or "?", {})[names[-1]] = value
    out: Reading = {}
    lossless: set[int] = set()
    for leaves in by_profile.values():
        prio = _number(leaves.get("priority"))
        if prio is None or not 0 <= prio < 8:
            continue
        lossless.add(int(prio))
        for leaf, metric in _OC_LEAVES.items():
            v = _number(leaves.get(leaf))
            if v is not None:
                out[(metric, int(prio))] = v
    for note in wred:
        for path, value in _leaves(note):
            red = {"min-threshold": "ecn_kmin_bytes",
                   "max-threshold": "ecn_kmax_bytes"}.get(path[-1][0]) if path else None
            v = _number(value)
            if red is not None and v is not None:
                for q in lossless:
                    out[(red, q)] = v
    return out


def parse_sonic(profiles: list[pb.Notification], qos_map: list[pb.Notification],
                wred: list[pb.Notification]) -> Reading:
    """Thresholds from SONiC's CONFIG_DB: the lossless buffer profile, applied to the priorities
    ``PORT_QOS_MAP`` enables PFC on; the WRED profile's green thresholds on their queues."""
    lossless: set[int] = set()
    for _path_, value in (leaf for n in qos_map for leaf in _leaves(n)):
        if _path_ and _path_[-1][0] == "pfc_enable":
            lossless |= {int(p) for p in str(value).split(",") if p.strip().isdigit()}
    fields: dict[str, float] = {}
    for path, value in (leaf for n in profiles for leaf in _leaves(n)):
        names = [n for n, _ in path]
        if not any("lossless" in n for n in names[:-1]):
            continue
        v = _number(value)
        if v is not None and names[-1] in _SONIC_LEAVES:
            fields[_SONIC_LEAVES[names[-1]]] = v
    for path, value in (leaf for n in wred for leaf in _leaves(n)):
        red = {"green_min_threshold": "ecn_kmin_bytes",
               "green_max_threshold": "ecn_kmax_bytes"}.get(path[-1][0]) if path else None
        v = _number(value)
        if red is not None and v is not None:
            fields[red] = v
    return {(metric, p): v for metric, v in fields.items() for p in sorted(lossless)}


class _Reader:
    """One target's reads: its channel, its dialect, its retry state, its last outcome."""

    def __init__(self, target: Target, origin: str, env: dict[str, str],
                 options: BufferConfigOptions) -> None:
        self.target = target
        self.origin = origin
        self.env = env
        self.options = options
        self.period_s = options.every_intervals * target.sample_interval_s / target.clock_rate
        self.reads = 0
        self.errors = 0
        self.last_error = ""
        self.supported = True

    async def run(self, stopping: asyncio.Event, emit: Emit) -> None:
        backoff = Backoff(RetryPolicy(initial_s=min(self.period_s, 1.0),
                                      cap_s=max(30.0, self.period_s)))
        channel: grpc.aio.Channel | None = None
        try:
            loop = asyncio.get_running_loop()
            due = loop.time()
            while not stopping.is_set():
                try:
                    if channel is None:
                        channel = open_channel(self.target)
                    reading, ts = await self.read(channel)
                    # readings on a fixed schedule, however long each takes
                    due = max(due + self.period_s, loop.time())
                    backoff.succeed()
                    if reading:
                        emit_reading(emit, self.target.name, ts, reading)
                        self.reads += 1
                    elif self.supported:
                        self.supported = False
                        log.info("%s serves no buffer configuration this collector reads",
                                 self.target.name)
                    if not reading:
                        due += self.period_s * _UNSUPPORTED_BACKOFF
                except (grpc.RpcError, OSError, ValueError) as exc:
                    self.errors += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"[:200]
                    due = loop.time() + (backoff.fail() or self.period_s)
                    if channel is not None:
                        await channel.close(grace=None)
                        channel = None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), timeout=max(0.0, due - loop.time()))
        finally:
            if channel is not None:
                await channel.close(grace=None)

    async def read(self, channel: grpc.aio.Channel) -> tuple[Reading, int]:
        """One reading of the target's thresholds, and the device time it was taken at."""
        rpc = channel.unary_unary(GET, request_serializer=pb.GetRequest.SerializeToString,
                                  response_deserializer=pb.GetResponse.FromString)
        md = metadata(resolve_secrets(self.target, self.env))

        async def one(request: pb.GetRequest) -> list[pb.Notification]:
            try:
                reply = await rpc(request, metadata=md, timeout=self.options.timeout_s)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNIMPLEMENTED,
                                  grpc.StatusCode.INVALID_ARGUMENT):
                    return []  # this path is not served: the others may be
                raise
            return list(reply.notification)

        # the paths at once: a reading takes one round trip, so it is as fresh as its cadence
        answers = list(await asyncio.gather(*(one(r) for r in requests(self.origin))))
        ts = max((n.timestamp for notes in answers for n in notes), default=0)
        if self.origin == "openconfig":
            return parse_openconfig(answers[0], answers[1]), ts
        return parse_sonic(answers[0], answers[1], answers[2]), ts


def emit_reading(emit: Emit, device: str, ts_ns: int, reading: Reading) -> None:
    b = BatchBuilder()
    for (metric, qual), value in sorted(reading.items()):
        b.add(ts_ns, device, "", metric_id(metric), qual, value)
    emit(b.build())


class GnmiBufferConfig(Collector):
    """Reads every gNMI target's lossless buffer and PFC configuration with Get."""

    name = "gnmi_buffer_config"
    Options = BufferConfigOptions

    def __init__(self, instance: str, options: BufferConfigOptions, *, emit: Emit) -> None:
        super().__init__(instance, options, emit=emit)
        self.opts = options
        targets, env = load_targets(options, "gnmi")
        self.readers: dict[str, _Reader] = {}
        for target in targets:
            profile = load_profile(target.profile, options.profile_dirs)
            if isinstance(profile, GnmiProfile):
                self.readers[target.name] = _Reader(target, profile.origin or "", env, options)

    def run(self, stop: threading.Event) -> None:
        asyncio.run(self._main(stop))

    async def _main(self, stop: threading.Event) -> None:
        stopping = asyncio.Event()
        readers = [asyncio.create_task(r.run(stopping, self.emit)) for r in self.readers.values()]
        self.started.set()
        await asyncio.to_thread(stop.wait)
        stopping.set()
        await asyncio.gather(*readers)

    def health(self) -> dict[str, Any]:
        return summarize("gnmi_buffer_config", self.instance, {
            name: {"up": r.errors == 0 or r.reads > 0, "reads": r.reads, "errors": r.errors,
                   "last_error": r.last_error, "supported": r.supported}
            for name, r in self.readers.items()})
