"""A runbook rig for the tests: a fabric with a real gNMI target per switch, a real HTTP TE
endpoint, the drainer wired to them, and telemetry fed on the tests' event time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.metrics import metric_id
from pipeline.model import ActionResult, Alert, BatchBuilder
from pipeline.topology.model import Port, Topology, spine_leaf
from remediation.audit import Recorder
from remediation.drains.devices import DeviceDirectory
from remediation.drains.runbook import Drainer
from remediation.drains.switch import GnmiSwitches, SwitchControl
from remediation.drains.te import HttpTe
from remediation.drains.telemetry import LinkTelemetry
from remediation.settings import GnmiSettings, RemediationSettings, TeSettings
from tests.remediation.gnmi_target import Targets
from tests.remediation.support import at

FAST = {
    "guards": {"confirm": "10s", "cooldown": "60s", "target_cooldown": "10m"},
    "drain": {"verify_samples": 2, "verify_timeout": "30s", "down_timeout": "10s",
              "soak": "60s", "soak_min_samples": 3},
}


def settings(**over: Any) -> RemediationSettings:
    data: dict[str, Any] = {"mode": "auto", "state_path": "", **FAST}
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return RemediationSettings.model_validate(data)


@dataclass
class Rig:
    topology: Topology
    targets: Targets | None
    te_url: str
    settings: RemediationSettings
    #: talk to these switches instead of ``targets`` (the lab's agents)
    switches: SwitchControl | None = None
    #: this TE client instead of one for ``te_url`` with a single try
    te: HttpTe | None = None
    drainer: Drainer = field(init=False)
    recorder: Recorder = field(init=False)
    telemetry: LinkTelemetry = field(init=False)
    paged: list[Alert] = field(default_factory=list)
    _octets: dict[tuple[Port, str], float] = field(default_factory=dict)
    _errors: dict[Port, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.recorder = Recorder(None, "actions")
        self.telemetry = LinkTelemetry()
        switches = self.switches
        if switches is None and self.targets is not None:
            directory = DeviceDirectory(GnmiSettings(devices=self.targets.addresses))
            switches = self.switches = GnmiSwitches(directory, timeout_s=3)
        te = self.te or (HttpTe(self.te_url, TeSettings(attempts=1, timeout=3))
                         if self.te_url else None)
        self.drainer = Drainer(self.settings, self.topology, switches, te, self.telemetry,
                               self.recorder, page=self.paged.append)

    # -- telemetry on event time ----------------------------------------------------------------

    def traffic(self, t: float, ports: tuple[Port, ...], gbps: float, errors: float = 0,
                oper: int | None = None, dt: float = 1.0) -> None:
        """One sample per port at event time ``t``: octet counters grown by ``gbps`` over the
        last ``dt`` seconds, error counters grown by ``errors``, status as the fabric says."""
        b = BatchBuilder()
        for port in ports:
            for metric in ("if_out_octets", "if_in_octets"):
                key = (port, metric)
                self._octets[key] = self._octets.get(key, 1e12) + gbps * 1e9 / 8 * dt
                b.add(at(t), port.device, port.name, metric_id(metric), -1, self._octets[key])
            self._errors[port] = self._errors.get(port, 100.0) + errors
            b.add(at(t), port.device, port.name, metric_id("if_in_fcs_errors"), -1,
                  self._errors[port])
            state = oper
            if state is None and self.switches is not None:
                state = 1 if self.switches.status(port).oper == "UP" else 2
            b.add(at(t), port.device, port.name, metric_id("if_oper_status"), -1, state or 1)
        self.telemetry.observe(b.build())

    # -- shorthands ------------------------------------------------------------------------------

    def alerts(self, *alerts: Alert, t: float = 0) -> None:
        self.drainer.on_alerts(alerts, at(t))

    def tick(self, t: float) -> None:
        self.drainer.tick(at(t))

    def records(self, action: str | None = None) -> list[ActionResult]:
        return self.recorder.find(action=action)

    def phases(self) -> list[str]:
        return [r.detail.split("]")[0].lstrip("[") for r in self.records()
                if r.action not in ("command", "maintenance")]


def fabric(spines: int = 4, leaves: int = 4, hosts: int = 2) -> Topology:
    return spine_leaf(spines, leaves, hosts)
