"""Disabling, enabling and checking switch ports over gNMI (raw stubs, explicit deadlines).

The hard step of a drain is the OpenConfig leaf ``/interfaces/interface[name=X]/config/enabled``
set to ``false`` with a gNMI ``Set`` (``update``, JSON_IETF), and verified with a ``Get`` of
``state/admin-status`` and ``state/oper-status``. The generated stubs shipped with pygnmi are used
directly rather than pygnmi's client, because every RPC here needs a deadline (a hung switch must
fail a step, not hang the runbook) and one RPC per call, without a Capabilities round trip.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc

from pipeline.errors import RemediationError
from pipeline.topology.model import Port
from remediation.drains.devices import Device, DeviceDirectory


@dataclass(frozen=True)
class PortStatus:
    admin: str
    oper: str

    @property
    def down(self) -> bool:
        return self.admin == "DOWN" and self.oper in ("DOWN", "LOWER_LAYER_DOWN", "NOT_PRESENT")

    @property
    def up(self) -> bool:
        return self.admin == "UP" and self.oper == "UP"


class SwitchControl(Protocol):
    def set_enabled(self, port: Port, enabled: bool) -> str: ...

    def status(self, port: Port) -> PortStatus: ...


def interface_path(name: str, *leaf: str) -> Any:
    elems = [gnmi_pb2.PathElem(name="interfaces"),
             gnmi_pb2.PathElem(name="interface", key={"name": name})]
    elems += [gnmi_pb2.PathElem(name=part) for part in leaf]
    return gnmi_pb2.Path(elem=elems)


def _decode(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind in ("json_ietf_val", "json_val"):
        return json.loads(getattr(value, kind))
    if kind is None:
        return None
    return getattr(value, kind)


def _enum(value: Any) -> str:
    """``"openconfig-interfaces:UP"`` / ``"UP"`` / ``{"admin-status": "UP"}`` → ``"UP"``."""
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    return str(value).rpartition(":")[2].upper()


class GnmiSwitches:
    """Talks gNMI to the switches of a :class:`DeviceDirectory`; one channel per device."""

    def __init__(self, directory: DeviceDirectory, timeout_s: float = 5.0) -> None:
        self.directory = directory
        self.timeout_s = timeout_s
        self._channels: dict[str, tuple[grpc.Channel, Any]] = {}

    def _stub(self, device: Device) -> Any:
        cached = self._channels.get(device.name)
        if cached is None:
            if device.ca:
                creds = grpc.ssl_channel_credentials(
                    Path(device.ca).read_bytes(),
                    Path(device.key).read_bytes() if device.key else None,
                    Path(device.cert).read_bytes() if device.cert else None)
                options = ([("grpc.ssl_target_name_override", device.server_name)]
                           if device.server_name else [])
                channel = grpc.secure_channel(device.address, creds, options=options)
            else:
                channel = grpc.insecure_channel(device.address)
            cached = (channel, gnmi_pb2_grpc.gNMIStub(channel))
            self._channels[device.name] = cached
        return cached[1]

    def _metadata(self, device: Device) -> list[tuple[str, str]]:
        if not (device.username or device.password):
            return []
        return [("username", device.username), ("password", device.password)]

    def _call(self, port: Port, rpc: str, request: Any) -> Any:
        device = self.directory.lookup(port.device)
        stub = self._stub(device)
        try:
            return getattr(stub, rpc)(request, timeout=self.timeout_s,
                                      metadata=self._metadata(device))
        except grpc.RpcError as exc:
            code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
            details = exc.details() if hasattr(exc, "details") else str(exc)
            raise RemediationError(f"gNMI {rpc} to {port.device} ({device.address}) failed: "
                                   f"{code} {details}") from exc

    def set_enabled(self, port: Port, enabled: bool) -> str:
        """Set ``config/enabled``; returns what the switch answered."""
        update = gnmi_pb2.Update(path=interface_path(port.name, "config", "enabled"),
                                 val=gnmi_pb2.TypedValue(
                                     json_ietf_val=json.dumps(enabled).encode()))
        response = self._call(port, "Set", gnmi_pb2.SetRequest(update=[update]))
        ops = [gnmi_pb2.UpdateResult.Operation.Name(r.op) for r in response.response]
        if ops and any(op != "UPDATE" for op in ops):
            raise RemediationError(f"gNMI Set on {port}: unexpected operations {ops}")
        return f"{port} enabled={str(enabled).lower()}: {','.join(ops) or 'ok'}"

    def status(self, port: Port) -> PortStatus:
        request = gnmi_pb2.GetRequest(
            path=[interface_path(port.name, "state", "admin-status"),
                  interface_path(port.name, "state", "oper-status")],
            encoding=gnmi_pb2.Encoding.Value("JSON_IETF"))
        response = self._call(port, "Get", request)
        found: dict[str, str] = {}
        for notification in response.notification:
            for update in notification.update:
                leaf = (list(notification.prefix.elem) + list(update.path.elem))[-1].name
                found[leaf] = _enum(_decode(update.val))
        if "admin-status" not in found or "oper-status" not in found:
            raise RemediationError(f"gNMI Get on {port}: no admin/oper status in the answer")
        return PortStatus(found["admin-status"], found["oper-status"])

    def close(self) -> None:
        for channel, _ in self._channels.values():
            channel.close()
        self._channels.clear()
