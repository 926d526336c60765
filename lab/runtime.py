"""The lab as a programmatic object: start a scenario's fabric, its agents and TE controller.

::

    lab = Lab(scenario, speed=10.0, out_dir=Path("var/lab"), base_port=0)
    lab.start()               # simulator process, every agent, the TE controller; writes the files
    lab.wait_until(30.0)      # simulated seconds
    lab.agents()              # the agents.json document
    lab.stop()

``base_port`` 0 picks free ports; otherwise the TE controller listens on ``base_port`` and switch
``i`` (topology order) on ``base_port + 1 + i``. ``agents_for`` limits the agents to some switches
(the whole fabric is still simulated): how a fabric too big for one process's agents is measured.
Files written to ``out_dir``: ``topology.json``
(:meth:`Topology.to_json`), ``agents.json``, ``truth.json`` (and ``pki/`` with TLS).

Time: simulated second 0 is ``epoch_ns`` on the wall clock, and one simulated second lasts
``1 / speed`` wall seconds. Everything the agents serve is stamped ``epoch_ns + t * 1e9`` with the
simulated time ``t`` the data belongs to.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lab.agents import HOST, AgentHost
from lab.gnmi.dialects import SwitchModel
from lab.gnmi.target import GnmiTarget
from lab.inventory import AgentPlan, Credentials, agents_document, plan_agents
from lab.lldp import LldpFabric
from lab.runner import SimOptions, published_layout, serve_simulation
from lab.scenario.load import load_scenario
from lab.scenario.spec import Scenario
from lab.sim.simulation import DEFAULT_DT, DEFAULT_TICK
from lab.sim.snapshot_ring import (
    C_LIVE_TIME,
    C_STATE,
    STATE_DONE,
    STATE_FAILED,
    STATE_READY,
    SharedBlock,
)
from lab.sim.view import SimControl, SimView
from lab.snmp.agent import SnmpAgent
from lab.snmp.lldp import LldpMib
from lab.snmp.mib import SwitchMib
from lab.te.api import TeServer
from lab.te.controller import TeController
from lab.tls import LabPki, make_pki
from lab.wiring import Wiring, build_wiring
from pipeline.errors import LabError
from pipeline.topology.model import Topology

TLS_MODES = (None, "tls", "mtls")
_REPO_ROOT = Path(__file__).resolve().parent.parent


class Lab:
    def __init__(self, scenario: Scenario | str | Path, speed: float = 10.0,
                 out_dir: Path | str = Path("var/lab"), base_port: int = 0, *,
                 tls: str | None = None, snmp_version: str = "2c", isolate: bool = True,
                 dt: float = DEFAULT_DT, tick_s: float = DEFAULT_TICK, dcqcn: bool = False,
                 credentials: Credentials | None = None,
                 agents_for: Sequence[str] | None = None) -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        if speed <= 0:
            raise LabError("speed must be positive")
        if tls not in TLS_MODES:
            raise LabError(f"tls must be one of {TLS_MODES}")
        if snmp_version not in ("2c", "3"):
            raise LabError("snmp_version must be '2c' or '3'")
        self.speed = float(speed)
        self.out_dir = Path(out_dir)
        self.base_port = base_port
        self.tls = tls
        self.isolate = isolate
        if tick_s > self.scenario.sample_interval_s:
            # tick at least once per sample interval, on a whole number of steps
            tick_s = max(dt, dt * int(self.scenario.sample_interval_s / dt + 1e-9))
        self.options = SimOptions(speed=self.speed, dt=dt, tick_s=tick_s, dcqcn=dcqcn)
        base = credentials or Credentials()
        self.credentials = Credentials(**{**base.__dict__, "snmp_version": snmp_version})
        self.topology: Topology = self.scenario.topology()
        self.wiring: Wiring = build_wiring(self.topology)
        self.layout = published_layout(self.scenario, self.wiring, self.options.buffers)
        plans = plan_agents(self.scenario)
        # a switch keeps its port slot (base_port + 1 + i) whichever switches run agents
        self._slot = {p.switch: i for i, p in enumerate(plans)}
        #: what every device says over LLDP (every switch, whether or not it runs an agent)
        self.lldp = LldpFabric(self.scenario, self.wiring, self.layout,
                               {p.switch: p.profile for p in plans})
        if agents_for is not None:
            unknown = sorted(set(agents_for) - set(self._slot))
            if unknown:
                raise LabError(f"no switch {unknown[0]!r} in this fabric")
            wanted = set(agents_for)
            plans = [p for p in plans if p.switch in wanted]
        self.plans: list[AgentPlan] = plans
        self.epoch_ns = 0
        self.te_url = ""
        self.addresses: dict[str, str] = {}
        self.pki: LabPki | None = None
        self.models: dict[str, SwitchModel] = {}
        self.te: TeController | None = None
        self.snmp_agents: dict[str, SnmpAgent] = {}
        self._block: SharedBlock | None = None
        self._sim: subprocess.Popen[bytes] | threading.Thread | None = None
        self._conn: Any = None
        self._host: AgentHost | None = None
        self.view: SimView | None = None
        self.control: SimControl | None = None
        self._agents_doc: dict[str, Any] = {}
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Lab:
        if self._started:
            raise LabError("this lab is already started")
        self._started = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._block = SharedBlock(self.layout.size, slots=self._ring_slots())
        job = (self.scenario, self.options, self._block.name, self.layout.size,
               self._block.slots)
        if self.isolate:
            mine, theirs = socket.socketpair()
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
            proc = subprocess.Popen(
                [sys.executable, "-m", "lab.sim.process", str(theirs.fileno())],
                stdin=subprocess.PIPE, pass_fds=(theirs.fileno(),), env=env)
            theirs.close()
            assert proc.stdin is not None
            proc.stdin.write(pickle.dumps(job))
            proc.stdin.close()
            self._conn = Connection(mine.detach())
            self._sim = proc
        else:
            parent, child = mp.Pipe(duplex=True)
            self._conn = parent
            thread = threading.Thread(target=serve_simulation, args=(*job, child, True),
                                      name="lab-simulator", daemon=True)
            thread.start()
            self._sim = thread
        parent_conn = self._conn
        self._wait_state(STATE_READY, timeout=60.0)
        self.control = SimControl(parent_conn, self._block)
        self.view = SimView(self._block, self.layout, 0, self.speed, self.options.tick_s)
        if self.tls:
            self.pki = make_pki(self.out_dir / "pki")
        self._host = AgentHost()
        self._host.start()
        self._host.spawn(self.view.poll_forever())
        self._start_agents()
        self.epoch_ns = time.time_ns()
        t0 = time.monotonic()
        self.view.epoch_ns = self.epoch_ns
        for model in self.models.values():
            model.epoch_ns = self.epoch_ns
        self.control.send_raw(("go", t0))
        self._write_files()

    def _ring_slots(self) -> int:
        """Snapshots kept for late readers: about a wall second's worth, within 64 MB."""
        per_wall_s = self.speed / self.options.tick_s
        by_memory = (64 << 20) // (self.layout.size * 8)
        return int(max(8, min(max(32, per_wall_s), 1024, by_memory)))

    def _start_agents(self) -> None:
        assert self._host and self.view and self.control
        port = self.base_port
        creds = (self.credentials.username, self.credentials.password)
        view = self.view
        for plan in self.plans:
            want = port + 1 + self._slot[plan.switch] if port else 0
            if plan.protocol == "gnmi":
                model = SwitchModel(plan.switch, plan.profile, self.wiring, self.layout, 0,
                                    lldp=self.lldp, snapshot=lambda: view.snapshot)
                self.models[plan.switch] = model
                target = GnmiTarget(model, self.view, self.control, creds,
                                    self.scenario.sample_interval_s)
                bound = self._host.call(self._host.start_gnmi(
                    plan.switch, target, want, self.pki, self.tls == "mtls"))
                self.addresses[plan.switch] = f"{HOST}:{bound}"
            else:
                self.addresses[plan.switch] = self._start_snmp(plan, want)
        self.te_url = self._start_te(port)

    def _start_snmp(self, plan: AgentPlan, port: int) -> str:
        assert self._host and self.view
        mib = SwitchMib(plan.switch, self.wiring, self.layout, lambda: self.epoch_ns,
                        LldpMib(self.lldp, plan.switch, self.wiring, self.layout))
        agent = SnmpAgent(plan.switch, mib, self.view, self.credentials)

        async def start() -> int:
            return agent.start(port)

        bound = self._host.call(start())
        self._host.add_closer(agent.stop)
        self.snmp_agents[plan.switch] = agent
        return f"{HOST}:{bound}"

    def _start_te(self, port: int) -> str:
        assert self._host and self.view and self.control
        self.te = TeController(self.scenario, self.wiring, self.view, self.control)
        self.te.program_initial()
        server = TeServer(self.te, HOST, port)
        bound = self._host.call(server.start())
        self._host.add_closer(server.stop)
        self._host.spawn(self.te.watch())
        return f"http://{HOST}:{bound}"

    def stop(self) -> None:
        """Stop the agents, the TE controller and the simulator; idempotent."""
        if self._host is not None:
            self._host.stop()
            self._host = None
        if self._conn is not None:
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(("stop",))
        sim = self._sim
        if isinstance(sim, threading.Thread):
            sim.join(timeout=10.0)
        elif sim is not None:
            try:
                sim.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                sim.terminate()
                try:
                    sim.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    sim.kill()
                    sim.wait()
        self._sim = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._block is not None:
            self._block.close()
            self._block = None
        self._started = False

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the API others use

    def sim_time(self) -> float:
        """Simulated seconds reached so far."""
        return float(self._need_block().ctrl[C_LIVE_TIME])

    def wait_until(self, sim_s: float, timeout: float | None = None) -> bool:
        """Block until simulated time reaches ``sim_s``; False on timeout."""
        if sim_s > self.scenario.duration_s + 1e-9:
            raise LabError(f"t={sim_s}s is past the scenario's end ({self.scenario.duration_s}s)")
        block = self._need_block()
        deadline = None if timeout is None else time.monotonic() + timeout
        step_wall = self.options.dt / self.speed
        while float(block.ctrl[C_LIVE_TIME]) + 1e-9 < sim_s:
            self._check_alive()
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(min(0.01, max(step_wall, 0.001)))
        return True

    def truth(self) -> list[dict[str, Any]]:
        return self.scenario.truth()

    def agents(self) -> dict[str, Any]:
        return self._agents_doc

    def snapshot(self) -> NDArray[np.float64]:
        """A copy of the latest published snapshot vector (see :mod:`lab.counters`)."""
        return self._need_block().read()

    def set_admin(self, switch: str, port: str, up: bool, wait: bool = True) -> None:
        """Administratively enable/disable a switch port, as a gNMI Set would."""
        ctl = self._need_control()
        seq = ctl.send("admin", self.wiring.port_index(switch, port), up)
        if wait:
            ctl.wait_applied(seq)

    def reset_counters(self, switch: str, wait: bool = True) -> None:
        """Simulate a reboot of ``switch``'s counters: they restart from 0, uptime too."""
        ctl = self._need_control()
        seq = ctl.send("reset", self.wiring.device_index(switch))
        if wait:
            ctl.wait_applied(seq)

    @property
    def simulator_pid(self) -> int | None:
        """The simulator's process id (None when it runs as a thread)."""
        return self._sim.pid if isinstance(self._sim, subprocess.Popen) else None

    def gnmi_targets(self) -> dict[str, GnmiTarget]:
        return dict(self._host.gnmi_targets) if self._host else {}

    @property
    def finished(self) -> bool:
        return self._block is not None and int(self._block.ctrl[C_STATE]) == STATE_DONE

    # ------------------------------------------------------------------ internals

    def _write_files(self) -> None:
        tls_doc = None
        if self.pki is not None:
            tls_doc = {"ca": str(self.pki.ca.resolve()),
                       "cert": str(self.pki.client_cert.resolve()),
                       "key": str(self.pki.client_key.resolve())}
        self._agents_doc = agents_document(self.scenario, self.epoch_ns, self.speed, self.te_url,
                                           self.plans, self.addresses, self.credentials, tls_doc)
        _write_json(self.out_dir / "topology.json", self.topology.to_json())
        _write_json(self.out_dir / "agents.json", self._agents_doc)
        _write_json(self.out_dir / "truth.json", self.truth())

    def _wait_state(self, state: int, timeout: float) -> None:
        block = self._need_block()
        deadline = time.monotonic() + timeout
        while int(block.ctrl[C_STATE]) < state:
            self._check_alive()
            if time.monotonic() > deadline:
                raise LabError(f"the simulator did not get ready within {timeout}s")
            time.sleep(0.01)

    def _check_alive(self) -> None:
        block = self._need_block()
        if int(block.ctrl[C_STATE]) == STATE_FAILED:
            detail = ""
            if self._conn is not None and self._conn.poll(1.0):
                msg = self._conn.recv()
                detail = msg[1] if isinstance(msg, tuple) and msg[0] == "error" else str(msg)
            raise LabError(f"the simulator failed:\n{detail}")
        sim = self._sim
        alive = sim.is_alive() if isinstance(sim, threading.Thread) else (
            sim is not None and sim.poll() is None)
        if sim is not None and not alive:
            raise LabError("the simulator stopped unexpectedly")

    def _need_block(self) -> SharedBlock:
        if self._block is None:
            raise LabError("the lab is not running; call start() first")
        return self._block

    def _need_control(self) -> SimControl:
        if self.control is None:
            raise LabError("the lab is not running; call start() first")
        return self.control


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)
