"""Recorded gNMI streams: capture a target's raw SubscribeResponses, save them, serve them back.

A recording is what a target sent, byte for byte, so the decode path can be measured, profiled and
regression-tested offline, and a collector can be run against it at full speed (``rocewatch bench
collect`` does both). File format: one JSON header line (``{"format": 1, "profile": ...,
"device": ...}``), then each message as a 4-byte little-endian length followed by the serialized
``SubscribeResponse``.
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Mapping
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.subscription import subscribe_requests
from collectors.profile import GnmiProfile
from pipeline.errors import CollectorError, DecodeError

_LENGTH = struct.Struct("<I")


@dataclass(frozen=True)
class Recording:
    profile: str
    device: str
    messages: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(len(m) for m in self.messages)

    def save(self, path: Path) -> None:
        header = json.dumps({"format": 1, "profile": self.profile, "device": self.device})
        with path.open("wb") as out:
            out.write(header.encode() + b"\n")
            for message in self.messages:
                out.write(_LENGTH.pack(len(message)))
                out.write(message)

    @classmethod
    def load(cls, path: Path) -> Recording:
        data = path.read_bytes()
        line, _, body = data.partition(b"\n")
        try:
            header = json.loads(line)
        except ValueError as exc:
            raise DecodeError(f"{path} is not a gNMI recording: {exc}") from exc
        messages = []
        pos = 0
        while pos < len(body):
            (length,) = _LENGTH.unpack_from(body, pos)
            pos += _LENGTH.size
            messages.append(body[pos:pos + length])
            pos += length
        if pos != len(body):
            raise DecodeError(f"{path}: the last message is truncated")
        return cls(header["profile"], header["device"], tuple(messages))


def record(address: str, profile: GnmiProfile, device: str, seconds: float,
           interval_s: float = 1.0, metadata: Mapping[str, str] | None = None,
           credentials: grpc.ChannelCredentials | None = None) -> Recording:
    """Subscribe like the collector does and keep every response for ``seconds`` (wall)."""
    channel: Any = (grpc.secure_channel(address, credentials) if credentials else
                    grpc.insecure_channel(address))
    rpc = channel.stream_stream("/gnmi.gNMI/Subscribe",
                                request_serializer=pb.SubscribeRequest.SerializeToString,
                                response_deserializer=None)
    messages: list[bytes] = []
    try:
        requests = subscribe_requests(profile, interval_s, profile.encoding)
        for request in requests:
            call = rpc(iter([request]), metadata=tuple((metadata or {}).items()))
            # an ON_CHANGE stream may say nothing for a long time: the deadline cancels it
            timer = threading.Timer(seconds / len(requests), call.cancel)
            timer.start()
            try:
                messages.extend(call)
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.CANCELLED:
                    raise CollectorError(f"recording {device} at {address}: {exc}") from exc
            finally:
                timer.cancel()
    finally:
        channel.close()
    return Recording(profile.name, device, tuple(messages))


def gnmi_service(capabilities: Any, subscribe: Any) -> grpc.GenericRpcHandler:
    """The gNMI service of a server that plays streams back: Capabilities, and Subscribe with
    responses sent as the raw bytes ``subscribe`` yields (recorded or scripted)."""
    handlers = {
        "Capabilities": grpc.unary_unary_rpc_method_handler(
            capabilities, request_deserializer=pb.CapabilityRequest.FromString,
            response_serializer=pb.CapabilityResponse.SerializeToString),
        "Subscribe": grpc.stream_stream_rpc_method_handler(
            subscribe, request_deserializer=pb.SubscribeRequest.FromString,
            response_serializer=None),
    }
    return grpc.method_handlers_generic_handler("gnmi.gNMI", handlers)


def serve(recording: Recording, host: str = "127.0.0.1") -> tuple[Any, int]:
    """A gNMI target on ``host`` that answers every Subscribe with the recording, looped, as
    fast as the client reads (no credentials checked). Returns ``(grpc server, port)``."""

    def capabilities(request: pb.CapabilityRequest, context: Any) -> pb.CapabilityResponse:
        return pb.CapabilityResponse(supported_encodings=[pb.JSON_IETF, pb.PROTO, pb.JSON])

    def subscribe(requests: Any, context: Any) -> Any:
        next(requests)
        while context.is_active():
            yield from recording.messages

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((gnmi_service(capabilities, subscribe),))
    port = server.add_insecure_port(f"{host}:0")
    server.start()
    return server, port
