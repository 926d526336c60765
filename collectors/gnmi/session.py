"""One gNMI target's session: connect, subscribe, stream, and come back after every failure.

pygnmi sets the session up: it builds the channel (plain, TLS, or mutual TLS; username and
password go as call metadata) and runs the Capabilities RPC, which proves the target answers and
tells which encodings it supports. The Subscribe stream is then opened on pygnmi's channel with a
raw-bytes deserializer, so every response reaches :class:`~collectors.gnmi.decode.GnmiDecoder`
undecoded: a malformed message is counted there instead of killing the stream in gRPC's
deserializer, and the decode is ours (the hot path).

A session ends when the stream fails, the target closes it, or it stays silent for the idle
timeout; the session then reconnects under the retry policy (:mod:`pipeline.retry`: exponential
backoff, full jitter, so a fabric-wide outage does not come back as a thundering herd); a session
that brought data starts the next streak afresh.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
from pygnmi import client as pygnmi_client
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.mapping import split_path, subscription_path
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile
from pipeline.errors import CollectorError, ConfigError
from pipeline.inventory import Target, resolve_secrets
from pipeline.retry import Backoff, RetryPolicy

log = logging.getLogger("rocewatch.collectors.gnmi")

# pygnmi attaches its own stdout handler at import; let its records go through logging's normal
# handlers instead, so a flapping target does not print a line per attempt.
for _handler in list(pygnmi_client.logger.handlers):
    pygnmi_client.logger.removeHandler(_handler)



class _Client(pygnmi_client.gNMIclient):  # type: ignore[misc]
    """pygnmi's client, without its retry that sets GRPC_SSL_CIPHER_SUITES for the whole
    process when a TLS connection times out, and with its channel reachable."""

    def wait_for_connect(self, timeout: float) -> None:
        grpc.channel_ready_future(self.channel).result(timeout=timeout)

    @property
    def channel(self) -> grpc.Channel:
        channel: grpc.Channel = self._gNMIclient__channel
        return channel

    @property
    def encodings(self) -> list[str]:
        return list(getattr(self, "_gNMIclient__supported_encodings", None) or [])


#: reconnecting to a target after its session ended
RECONNECT = RetryPolicy(initial_s=0.5, cap_s=30.0)
_ENCODINGS = {"json": pb.JSON, "proto": pb.PROTO, "json_ietf": pb.JSON_IETF}
_SUBSCRIBE = "/gnmi.gNMI/Subscribe"


@dataclass(frozen=True)
class SessionOptions:
    connect_timeout_s: float = 5.0
    #: reconnecting after a session ends
    reconnect: RetryPolicy = RECONNECT
    #: a stream silent for this many sample intervals (wall time) is torn down and reopened,
    idle_intervals: float = 10.0
    #: but never sooner than this (a busy target at a fast simulated clock is not a hung one)
    idle_min_s: float = 10.0
    keepalive_s: float = 0.0


def parse_path(text: str, origin: str = "", target: str = "") -> pb.Path:
    elems = [pb.PathElem(name=name, key=keys) for name, keys in split_path(text)]
    return pb.Path(elem=elems, origin=origin, target=target)


def subscribe_requests(profile: GnmiProfile, interval_s: float,
                       encoding: str) -> list[pb.SubscribeRequest]:
    """One SubscribeRequest per (target, origin) of the profile's groups (SONiC: per DB)."""
    lists: dict[tuple[str, str], pb.SubscriptionList] = {}
    for group in profile.groups:
        origin = profile.origin if group.origin is None else group.origin
        slist = lists.get((group.target, origin))
        if slist is None:
            slist = lists[(group.target, origin)] = pb.SubscriptionList(
                prefix=pb.Path(origin=origin, target=group.target),
                mode=pb.SubscriptionList.STREAM, encoding=_ENCODINGS[encoding])
        paths = ([group.path] if group.subscribe == "container" else
                 [f"{group.path.rstrip('/')}/{rel}" for rel in group.leaves])
        for text in paths:
            sub = slist.subscription.add(path=parse_path(subscription_path(text)))
            if group.mode == "sample":
                sub.mode = pb.SAMPLE
                sub.sample_interval = int(interval_s * 1e9)
            else:
                sub.mode = pb.ON_CHANGE
    return [pb.SubscribeRequest(subscribe=s) for s in lists.values()]


@dataclass
class _Stream:
    """One session's streams: the first to end sets ``done``; what ended them."""

    done: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)
    #: torn down by the idle watchdog (already counted as ``idle``)
    idle: bool = False


class GnmiSession:
    """Keeps one target subscribed until stopped; see the module docstring."""

    def __init__(self, target: Target, profile: GnmiProfile, decoder: GnmiDecoder,
                 health: TargetHealth, tally: ErrorTally, env: Mapping[str, str],
                 options: SessionOptions) -> None:
        self.target = target
        self.profile = profile
        self.decoder = decoder
        self.health = health
        self.tally = tally
        self.env = env
        self.options = options
        self.encoding = profile.encoding
        self._lock = threading.Lock()
        self._client: _Client | None = None
        self._calls: list[Any] = []
        self._closing = False
        self._last_message = 0.0
        self._stream: _Stream | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        backoff = Backoff(self.options.reconnect)
        while not stop.is_set():
            got_data = False
            try:
                got_data = self._session(stop)
            except ConfigError as exc:
                self.health.last_error = str(exc)
                self.tally.record(self.health, "config", str(exc))
            except (CollectorError, grpc.RpcError, grpc.FutureTimeoutError,
                    pygnmi_client.gNMIException, OSError, ValueError) as exc:
                kind, detail = self._classify(exc)
                self.health.last_error = detail
                if not stop.is_set():
                    self.tally.record(self.health, kind, detail)
            except Exception as exc:  # the session's boundary: its thread must outlive surprises
                detail = f"{type(exc).__name__}: {exc}"
                self.health.last_error = detail
                log.debug("session %s failed", self.target.name, exc_info=True)
                self.tally.record(self.health, "internal", detail)
            finally:
                self._teardown()
            if stop.is_set():
                break
            if got_data:
                backoff.succeed()
            delay = backoff.fail()
            if delay is None or stop.wait(delay):
                break

    def close(self) -> None:
        """Stop the session from another thread (the collector's stop)."""
        self._closing = True
        self._teardown()

    def check_idle(self, wall: float) -> None:
        """Tear the stream down if it has been silent too long (a hung target)."""
        limit = max(self.options.idle_intervals * self.health.interval_wall,
                    self.options.idle_min_s)
        stream = self._stream
        if stream is None or not self.health.connected or wall - self._last_message <= limit:
            return
        stream.idle = True
        self.tally.record(self.health, "idle",
                          f"no message for {wall - self._last_message:.1f}s; reconnecting")
        self._cancel_calls()

    # -- one session ---------------------------------------------------------------------------

    def _session(self, stop: threading.Event) -> bool:
        """One connection: returns True if data arrived, raises what ended it (unless asked)."""
        client = self._connect()
        with self._lock:
            if self._closing:
                return False
            self._client = client
        secrets = resolve_secrets(self.target, self.env)
        metadata = (("username", secrets.username), ("password", secrets.password))
        requests = subscribe_requests(self.profile, self.target.sample_interval_s, self.encoding)
        rpc = client.channel.stream_stream(
            _SUBSCRIBE, request_serializer=pb.SubscribeRequest.SerializeToString,
            response_deserializer=None)
        stream = _Stream()
        calls = [rpc(self._requests(req, stream.done, stop), metadata=metadata)
                 for req in requests]
        with self._lock:
            self._calls = calls
            if self._closing:
                self._cancel_calls()
        self._stream = stream
        self.health.connected, self.health.synced = True, False
        self.health.connects += 1
        self.health.last_error = ""
        self._last_message = time.monotonic()
        first = self.health.messages_total
        readers = [threading.Thread(target=self._read, args=(call, stream), daemon=True,
                                    name=f"gnmi-{self.target.name}-{i}")
                   for i, call in enumerate(calls[1:], 1)]
        for reader in readers:
            reader.start()
        try:
            self._read(calls[0], stream)
            stream.done.wait()
        finally:
            stream.done.set()
            self.health.connected = False
            self._stream = None
            self._cancel_calls()
            for reader in readers:
                reader.join(5.0)
        if not (stop.is_set() or self._closing or stream.idle):
            raise stream.errors[0] if stream.errors else CollectorError(
                "the target ended the stream")
        return self.health.messages_total > first

    def _requests(self, request: pb.SubscribeRequest, done: threading.Event,
                  stop: threading.Event) -> Iterator[pb.SubscribeRequest]:
        yield request
        # the stream stays open from our side: some targets end a subscription on half-close
        while not done.wait(1.0) and not stop.is_set():
            pass

    def _read(self, call: Any, stream: _Stream) -> None:
        """Feed one stream's responses to the decoder until it ends (any end ends them all)."""
        feed = self.decoder.feed
        try:
            for data in call:
                now = time.monotonic()
                self._last_message = now
                feed(data, now)
        except grpc.RpcError as exc:
            if not stream.done.is_set():
                stream.errors.append(exc)
        finally:
            stream.done.set()

    def _connect(self) -> _Client:
        target, tls = self.target, self.target.tls
        secrets = resolve_secrets(target, self.env)
        kwargs: dict[str, Any] = {
            "target": (target.host, target.port), "username": secrets.username,
            "password": secrets.password, "gnmi_timeout": self.options.connect_timeout_s,
            "insecure": tls is None, "no_qos_marking": True,
        }
        if self.options.keepalive_s > 0:
            kwargs["keepalive_time_ms"] = int(self.options.keepalive_s * 1000)
        if tls is not None:
            if tls.cert:
                kwargs.update(path_root=tls.ca, path_cert=tls.cert, path_key=tls.key)
            elif tls.ca:
                # pygnmi reads a lone path_cert as the trust root (server-authenticated TLS)
                kwargs["path_cert"] = tls.ca
            if tls.server_name:
                kwargs["override"] = tls.server_name
        client = _Client(**kwargs)
        client.connect()
        self._pick_encoding(client)
        return client

    def _pick_encoding(self, client: _Client) -> None:
        supported = client.encodings
        if not supported or self.profile.encoding in supported:
            self.encoding = self.profile.encoding
            return
        for candidate in ("json_ietf", "proto", "json"):
            if candidate in supported:
                if candidate != self.encoding:
                    log.info("%s does not offer %s; subscribing with %s", self.target.name,
                             self.profile.encoding, candidate)
                self.encoding = candidate
                return
        raise CollectorError(f"{self.target.name} supports none of json_ietf, proto, json "
                             f"(it offers {', '.join(supported)})")

    def _cancel_calls(self) -> None:
        with self._lock:
            calls = list(self._calls)
        for call in calls:
            call.cancel()

    def _teardown(self) -> None:
        self._cancel_calls()
        with self._lock:
            client, self._client = self._client, None
            self._calls = []
        if client is not None:
            client.close()

    @staticmethod
    def _classify(exc: BaseException) -> tuple[str, str]:
        if isinstance(exc, grpc.RpcError):
            code = exc.code() if hasattr(exc, "code") else None
            details = exc.details() if hasattr(exc, "details") else str(exc)
            if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                return "auth", f"{code.name}: {details}"
            if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED,
                        grpc.StatusCode.NOT_FOUND):
                return "subscribe_rejected", f"{code.name}: {details}"
            return "stream_lost", f"{code.name if code else 'error'}: {details}"
        if isinstance(exc, grpc.FutureTimeoutError):
            return "connect_failed", "no connection within the connect timeout"
        if isinstance(exc, pygnmi_client.gNMIException):
            cause = getattr(exc, "orig_exc", None)
            if isinstance(cause, grpc.RpcError):
                return GnmiSession._classify(cause)
            return "connect_failed", str(exc)
        if isinstance(exc, CollectorError):
            return "stream_lost", str(exc)
        return "connect_failed", f"{type(exc).__name__}: {exc}"
