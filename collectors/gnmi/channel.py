"""One gNMI target's gRPC channel on the collector's event loop (``grpc.aio``), and Capabilities.

The channel is plaintext, TLS verified against the target's CA (the system's roots when it names
none), or mutual TLS; ``server_name`` overrides the name the certificate is checked against.
Username and password travel as call metadata, as gNMI targets expect. Capabilities proves the
target answers and says which encodings it offers; :func:`pick_encoding` chooses the profile's, or
the best the target has.

Channel arguments keep a target's cost bounded and its own: no subchannel shared with another
target of the same address, a receive limit that fits a large initial notification, and HTTP/2
flow-control windows left at their default size (a slow collector pushes back on the target
instead of buffering for it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from pipeline.errors import CollectorError
from pipeline.inventory import Secrets, Target

log = logging.getLogger("rocewatch.collectors.gnmi")

#: the largest message a target may send (an initial notification of a big switch)
MAX_MESSAGE = 256 * 1024 * 1024
CAPABILITIES = "/gnmi.gNMI/Capabilities"
SUBSCRIBE = "/gnmi.gNMI/Subscribe"
_PREFERENCE = ("json_ietf", "proto", "json")


def metadata(secrets: Secrets) -> tuple[tuple[str, str], ...]:
    return (("username", secrets.username), ("password", secrets.password))


def open_channel(target: Target, keepalive_s: float = 0.0) -> grpc.aio.Channel:
    """The channel to a target (connects lazily, on the first call)."""
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", MAX_MESSAGE),
        ("grpc.use_local_subchannel_pool", 1),
        ("grpc.http2.bdp_probe", 0),
        ("grpc.enable_retries", 0),
    ]
    if keepalive_s > 0:
        options += [("grpc.keepalive_time_ms", int(keepalive_s * 1000)),
                    ("grpc.keepalive_timeout_ms", 10_000),
                    ("grpc.http2.max_pings_without_data", 0),
                    ("grpc.keepalive_permit_without_calls", 1)]
    tls = target.tls
    if tls is None:
        return grpc.aio.insecure_channel(target.address, options=options)
    try:
        root = Path(tls.ca).read_bytes() if tls.ca else None
        key = Path(tls.key).read_bytes() if tls.key else None
        cert = Path(tls.cert).read_bytes() if tls.cert else None
    except OSError as exc:
        raise CollectorError(f"{target.name}: cannot read its TLS files: {exc}") from exc
    if tls.server_name:
        options.append(("grpc.ssl_target_name_override", tls.server_name))
    credentials = grpc.ssl_channel_credentials(root_certificates=root, private_key=key,
                                               certificate_chain=cert)
    return grpc.aio.secure_channel(target.address, credentials, options=options)


async def capabilities(channel: grpc.aio.Channel, secrets: Secrets,
                       timeout_s: float) -> list[str]:
    """The encodings the target offers (lower-case gNMI names); a refused connection fails at
    once, a slow one at the timeout."""
    rpc = channel.unary_unary(CAPABILITIES,
                              request_serializer=pb.CapabilityRequest.SerializeToString,
                              response_deserializer=pb.CapabilityResponse.FromString)
    reply: pb.CapabilityResponse = await rpc(pb.CapabilityRequest(), metadata=metadata(secrets),
                                              timeout=timeout_s)
    return [pb.Encoding.Name(e).lower() for e in reply.supported_encodings]


def pick_encoding(name: str, wanted: str, supported: list[str]) -> str:
    """The profile's encoding when offered (or nothing is said), else the best offered."""
    if not supported or wanted in supported:
        return wanted
    for candidate in _PREFERENCE:
        if candidate in supported:
            log.info("%s does not offer %s; subscribing with %s", name, wanted, candidate)
            return candidate
    raise CollectorError(f"{name} supports none of json_ietf, proto, json "
                         f"(it offers {', '.join(supported)})")


def classify(exc: BaseException, connecting: bool) -> tuple[str, str]:
    """An error kind for the health tally and a one-line detail."""
    if isinstance(exc, grpc.RpcError):
        code = exc.code() if hasattr(exc, "code") else None
        details = exc.details() if hasattr(exc, "details") else str(exc)
        name = code.name if code is not None else "error"
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            return "auth", f"{name}: {details}"
        if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED,
                    grpc.StatusCode.NOT_FOUND):
            return "subscribe_rejected", f"{name}: {details}"
        if connecting:
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return "connect_failed", f"no connection within the connect timeout ({details})"
            return "connect_failed", f"{name}: {details}"
        return "stream_lost", f"{name}: {details}"
    if isinstance(exc, CollectorError):
        return ("connect_failed" if connecting else "stream_lost"), str(exc)
    return "connect_failed", f"{type(exc).__name__}: {exc}"
