"""A minimal gNMI target on loopback for the runbook tests: one grpcio server per switch that
answers Capabilities, Get of interface admin/oper status and Set of ``config/enabled`` (which
takes the port down or up, at both ends of a link when the peer is known), and records every Set.
"""

from __future__ import annotations

import json
import threading
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc

from pipeline.topology.model import Port, Topology


@dataclass
class Fabric:
    """Port state shared by every switch's target: admin enabled per port; oper follows both
    ends of a link."""

    topology: Topology
    enabled: dict[Port, bool] = field(default_factory=dict)
    sets: list[tuple[Port, Any]] = field(default_factory=list)
    #: ports whose Set fails with UNAVAILABLE
    broken: set[Port] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def admin_up(self, port: Port) -> bool:
        return self.enabled.get(port, True)

    def oper_up(self, port: Port) -> bool:
        peer = self.topology.peer(port)
        return self.admin_up(port) and (peer is None or self.admin_up(peer))


def _leaf_value(path: Any) -> tuple[str, str]:
    elems = list(path.elem)
    return elems[1].key.get("name", ""), "/".join(e.name for e in elems[2:])


class SwitchTarget(gnmi_pb2_grpc.gNMIServicer):  # type: ignore[misc]
    def __init__(self, name: str, fabric: Fabric) -> None:
        self.name = name
        self.fabric = fabric

    def Capabilities(self, request: Any, context: Any) -> Any:
        return gnmi_pb2.CapabilityResponse(
            supported_encodings=[gnmi_pb2.Encoding.Value("JSON"),
                                 gnmi_pb2.Encoding.Value("JSON_IETF")], gNMI_version="0.8.0")

    def Get(self, request: Any, context: Any) -> Any:
        updates = []
        with self.fabric.lock:
            for path in request.path:
                iface, leaf = _leaf_value(path)
                port = Port(self.name, iface)
                if leaf == "state/admin-status":
                    value = "UP" if self.fabric.admin_up(port) else "DOWN"
                elif leaf == "state/oper-status":
                    value = "UP" if self.fabric.oper_up(port) else "DOWN"
                else:
                    context.abort(grpc.StatusCode.NOT_FOUND, f"no {leaf}")
                updates.append(gnmi_pb2.Update(path=path, val=gnmi_pb2.TypedValue(
                    json_ietf_val=json.dumps(f"openconfig-interfaces:{value}").encode())))
        return gnmi_pb2.GetResponse(notification=[gnmi_pb2.Notification(update=updates)])

    def Set(self, request: Any, context: Any) -> Any:
        results = []
        with self.fabric.lock:
            for update in request.update:
                iface, leaf = _leaf_value(update.path)
                port = Port(self.name, iface)
                if port in self.fabric.broken:
                    context.abort(grpc.StatusCode.UNAVAILABLE, f"{port} is wedged")
                if leaf != "config/enabled":
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"cannot set {leaf}")
                value = json.loads(update.val.json_ietf_val)
                self.fabric.sets.append((port, value))
                self.fabric.enabled[port] = bool(value)
                results.append(gnmi_pb2.UpdateResult(
                    path=update.path, op=gnmi_pb2.UpdateResult.Operation.Value("UPDATE")))
        return gnmi_pb2.SetResponse(response=results)


class Targets:
    """One gNMI server per switch of a topology, on 127.0.0.1 ephemeral ports."""

    def __init__(self, topology: Topology) -> None:
        self.fabric = Fabric(topology)
        self.addresses: dict[str, str] = {}
        self._servers: list[grpc.Server] = []
        for name in topology.switches:
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            gnmi_pb2_grpc.add_gNMIServicer_to_server(SwitchTarget(name, self.fabric), server)
            port = server.add_insecure_port("127.0.0.1:0")
            server.start()
            self._servers.append(server)
            self.addresses[name] = f"127.0.0.1:{port}"

    def stop(self) -> None:
        for server in self._servers:
            server.stop(0)
