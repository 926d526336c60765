"""One gNMI target's session, a coroutine on the collector's event loop: connect, subscribe,
stream, and come back after every failure.

A session waits for its turn at the collector's :class:`~collectors.gnmi.connects.ConnectGate`,
opens its channel (:mod:`collectors.gnmi.channel`) and runs Capabilities, then opens one Subscribe
call per request of the profile (:mod:`collectors.gnmi.subscription`) with a raw-bytes
deserializer, so every response reaches :class:`~collectors.gnmi.decode.GnmiDecoder` undecoded: a
malformed message is counted there instead of killing the stream in gRPC's deserializer, and the
decode is ours (the hot path). The request side of each call stays open (some targets end a
subscription when the client half-closes).

A session ends when a stream fails, the target closes it, or it stays silent for the idle timeout
(the collector's ticker calls :meth:`GnmiSession.check_idle`); it then reconnects under the retry
policy (:mod:`pipeline.retry`: exponential backoff, full jitter, capped at one sample interval
so a device that comes back is subscribed again within an interval). A session that brought data
starts the next streak afresh, and its first delay is at most a tenth of a sample interval; a
stream the target ended (OK status) is subscribed again on the same connection (no new handshake,
no Capabilities), so a restarted stream is back before its next sample is due.

The session's connection, while it is up, is shared (:meth:`GnmiSession.connection`): the
target's LLDP reader subscribes on it rather than opening a second one.

Memory per target is bounded: a session stops reading while its decoder holds more than
``max_buffered`` rows not yet taken (gRPC's flow control then holds the target back), and
resumes when the ticker has taken them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.channel import (
    SUBSCRIBE,
    capabilities,
    classify,
    metadata,
    open_channel,
    pick_encoding,
)
from collectors.gnmi.connects import ConnectGate
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.subscription import subscribe_requests
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile
from pipeline.errors import CollectorError, ConfigError
from pipeline.inventory import Target, resolve_secrets
from pipeline.retry import Backoff, RetryPolicy

log = logging.getLogger("rocewatch.collectors.gnmi")

#: reconnecting to a target after its session ended
RECONNECT = RetryPolicy(initial_s=0.5, cap_s=30.0)


@dataclass(frozen=True)
class SessionOptions:
    connect_timeout_s: float = 5.0
    #: reconnecting after a session ends (its first delay is capped at a tenth of an interval)
    reconnect: RetryPolicy = RECONNECT
    #: a stream silent for this many sample intervals (wall time) is torn down and reopened,
    idle_intervals: float = 10.0
    #: but never sooner than this (a busy target at a fast simulated clock is not a hung one)
    idle_min_s: float = 10.0
    keepalive_s: float = 0.0
    #: rows a target's decoder may hold before its session stops reading
    max_buffered: int = 200_000


class _Ended(CollectorError):
    """The target ended the stream (OK status)."""


class GnmiSession:
    """Keeps one target subscribed until stopped; see the module docstring."""

    def __init__(self, target: Target, profile: GnmiProfile, decoder: GnmiDecoder,
                 health: TargetHealth, tally: ErrorTally, env: Mapping[str, str],
                 options: SessionOptions, gate: ConnectGate) -> None:
        self.target = target
        self.profile = profile
        self.decoder = decoder
        self.health = health
        self.tally = tally
        self.env = env
        self.options = options
        self.gate = gate
        first = min(options.reconnect.initial_s, max(health.interval_wall / 10, 0.005))
        # a target that comes back is tried again within one of its intervals (the connect gate,
        # not the backoff's length, keeps many dead targets from crowding the collector)
        cap = max(first, min(options.reconnect.cap_s, health.interval_wall))
        self.policy = RetryPolicy(initial_s=first, cap_s=cap,
                                  reset_after_s=options.reconnect.reset_after_s)
        self._calls: list[Any] = []
        self._last_message = 0.0
        self._idle = False
        self._room = asyncio.Event()
        self._room.set()
        #: the connection while one is up, and its credentials: another subscription of the
        #: same target rides it (LLDP, :mod:`collectors.gnmi.lldp_readers`) instead of opening
        #: a second one
        self.channel: grpc.aio.Channel | None = None
        self.secrets: Any = None
        self._up = asyncio.Event()

    # -- lifecycle -----------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        backoff = Backoff(self.policy)
        channel: grpc.aio.Channel | None = None
        secrets: Any = None
        encoding: str = self.profile.encoding
        while not stopping.is_set():
            samples = self.health.samples_total
            connecting = channel is None
            keep = False
            try:
                if channel is None:
                    channel, secrets, encoding = await self._connect(stopping)
                    if channel is None:
                        return
                    self.channel, self.secrets = channel, secrets
                    self._up.set()
                connecting = False
                await self._stream(channel, secrets, encoding, stopping)
            except asyncio.CancelledError:
                raise
            except _Ended as exc:
                # the target ended the subscription, not the connection: subscribe again on it
                keep = True
                self.health.last_error = str(exc)
                self.tally.record(self.health, "stream_lost", str(exc))
            except ConfigError as exc:
                self.health.last_error = str(exc)
                self.tally.record(self.health, "config", str(exc))
            except (CollectorError, grpc.RpcError, OSError, ValueError) as exc:
                kind, detail = classify(exc, connecting)
                self.health.last_error = detail
                if not stopping.is_set():
                    self.tally.record(self.health, kind, detail)
            except Exception as exc:  # the session's boundary: it must outlive surprises
                detail = f"{type(exc).__name__}: {exc}"
                self.health.last_error = detail
                log.debug("session %s failed", self.target.name, exc_info=True)
                self.tally.record(self.health, "internal", detail)
            finally:
                self.health.session_ended()
                self._calls = []
                if channel is not None and (not keep or stopping.is_set()):
                    self._up.clear()
                    self.channel = None
                    await channel.close(grace=None)
                    channel = None
            if stopping.is_set():
                break
            if self.health.samples_total > samples:
                backoff.succeed()  # it worked: a restart is not a failure streak
            delay = backoff.fail()
            if delay is None:
                break
            try:
                await asyncio.wait_for(stopping.wait(), timeout=delay)
            except TimeoutError:
                continue
        self._up.clear()
        self.channel = None
        if channel is not None:
            await channel.close(grace=None)

    async def connection(self, stopping: asyncio.Event) -> tuple[grpc.aio.Channel, Any] | None:
        """The session's connection and credentials once it is up (None: the collector stopped
        first). It closes when the session's streams fail: a call on it then fails too, and its
        caller asks again."""
        while not stopping.is_set():
            if self.channel is not None:
                return self.channel, self.secrets
            up = asyncio.ensure_future(self._up.wait())
            stop = asyncio.ensure_future(stopping.wait())
            try:
                await asyncio.wait([up, stop], return_when=asyncio.FIRST_COMPLETED)
            finally:
                up.cancel()
                stop.cancel()
        return None

    async def _connect(self, stopping: asyncio.Event
                       ) -> tuple[grpc.aio.Channel | None, Any, str]:
        """A new channel through the connect gate, Capabilities answered: ``(channel, secrets,
        encoding)``, or no channel when the collector stopped while waiting its turn."""
        await self.gate.acquire()
        channel: grpc.aio.Channel | None = None
        try:
            if stopping.is_set():
                return None, None, ""
            secrets = resolve_secrets(self.target, self.env)
            channel = open_channel(self.target, self.options.keepalive_s)
            offered = await capabilities(channel, secrets, self.options.connect_timeout_s)
            encoding = pick_encoding(self.target.name, self.profile.encoding, offered)
            return channel, secrets, encoding
        except BaseException:
            if channel is not None:
                await channel.close(grace=None)
            raise
        finally:
            self.gate.release()

    def check_idle(self, wall: float) -> None:
        """Tear the streams down if they have been silent too long (a hung target)."""
        limit = max(self.options.idle_intervals * self.health.interval_wall,
                    self.options.idle_min_s)
        if not self._calls or not self.health.connected or wall - self._last_message <= limit:
            return
        self._idle = True
        self.tally.record(self.health, "idle",
                          f"no message for {wall - self._last_message:.1f}s; reconnecting")
        for call in self._calls:
            call.cancel()

    def taken(self) -> None:
        """The ticker took the decoder's rows: a session that paused may read again."""
        self._room.set()

    # -- one session ---------------------------------------------------------------------------

    async def _stream(self, channel: grpc.aio.Channel, secrets: Any, encoding: str,
                      stopping: asyncio.Event) -> bool:
        """The Subscribe calls of one connection: True if data arrived; raises what ended them
        (unless the collector is stopping or the idle watchdog ended them)."""
        rpc = channel.stream_stream(SUBSCRIBE,
                                    request_serializer=pb.SubscribeRequest.SerializeToString,
                                    response_deserializer=None)
        requests = subscribe_requests(self.profile, self.target.sample_interval_s, encoding)
        calls = [rpc(metadata=metadata(secrets)) for _ in requests]
        self._calls, self._idle = calls, False
        for call, request in zip(calls, requests, strict=True):
            await call.write(request)
        self._last_message = time.monotonic()
        self.decoder.begin_session()
        self.health.session_started(self._last_message)
        first = self.health.samples_total
        readers = [asyncio.ensure_future(self._read(call)) for call in calls]
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait([*readers, stop], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for call in calls:
                call.cancel()
            for task in (*readers, stop):
                task.cancel()
            ended = await asyncio.gather(*readers, return_exceptions=True)
        if not (stopping.is_set() or self._idle):
            error = next((e for e in ended if isinstance(e, BaseException)
                          and not isinstance(e, asyncio.CancelledError)), None)
            raise error or _Ended("the target ended the stream")
        return self.health.samples_total > first

    async def _read(self, call: Any) -> None:
        """Feed one stream's responses to the decoder until it ends."""
        feed, decoder, limit = self.decoder.feed, self.decoder, self.options.max_buffered
        initial = True
        while True:
            data = await call.read()
            if data is grpc.aio.EOF:
                return
            now = time.monotonic()
            self._last_message = now
            if feed(data, now, initial):
                initial = False
            if decoder.pending > limit:
                self._room.clear()
                await self._room.wait()
