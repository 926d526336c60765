"""``rocewatch up``: the whole platform on one machine, watching the lab (what ``make run`` runs).

Three processes, each stopped by its PID on exit:

* the lab (``rocewatch lab run``): the simulated fabric, its device agents and TE controller;
* this process: every role (collect, ingest, detect, remediate, api) on the embedded backends;
* the Streamlit dashboard, reading the API.

The demo scenario (``rocewatch/demo.yaml``) corrupts a fabric link a minute in and later sticks
a host's NIC, so a person watching the dashboard sees faults appear, named, and the runbooks'
dry-run decisions.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click
import httpx

from pipeline.errors import LabError
from rocewatch.app import ALL_ROLES, Platform
from rocewatch.settings import Settings, load_settings
from ui.api.access import TokenEntry, mint, token_hash
from ui.dashboard.launch import DashboardOptions, command, environment

log = logging.getLogger("rocewatch.up")

DEMO = Path(__file__).with_name("demo.yaml")


def _free_port(preferred: int) -> int:
    """``preferred`` when it is free on loopback, else any free port."""
    for port in (preferred, 0):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise OSError("no free port on 127.0.0.1")


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the lab exited with code {proc.returncode} before it was ready")
        if path.exists():
            try:
                doc: dict[str, Any] = json.loads(path.read_text())
                return doc
            except ValueError:
                pass  # being written
        time.sleep(0.2)
    raise LabError(f"the lab did not write {path} within {timeout:.0f}s")


def _wait_http(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


def _stop(proc: subprocess.Popen[bytes] | None, name: str, grace: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        log.warning("%s (pid %d) ignored SIGTERM; killing it", name, proc.pid)
        proc.kill()
        proc.wait(5)


def platform_settings(base: Settings, workdir: Path, agents_path: Path, agents: dict[str, Any],
                      api_port: int) -> Settings:
    """The platform's settings for watching a lab whose agents are described in agents_path."""
    data = base.model_dump(mode="python", by_alias=True)
    data["topology"] = str(agents_path.with_name("topology.json"))
    data["store"]["chdb_path"] = str(workdir / "chdb")
    data["api"]["port"] = api_port
    if not base.collectors:
        data["collectors"] = [{"type": "gnmi", "name": "gnmi", "agents": str(agents_path)},
                              {"type": "snmp", "name": "snmp", "agents": str(agents_path)}]
    rem = data["remediation"]
    rem["te_controller"] = rem.get("te_controller") or agents.get("te_controller", "")
    rem["gnmi"]["lab_agents_file"] = str(agents_path)
    rem["state_path"] = str(workdir / "remediation-state.json")
    return Settings.model_validate(data)


#: the identity of the token ``rocewatch up`` mints for its own dashboard
SESSION_IDENTITY = "rocewatch-up"


def with_session_token(settings: Settings) -> tuple[Settings, str]:
    """When the config names no token at all, an admin token for this run only: the API honours
    it (its hash is added to ``access.tokens``) and the dashboard signs in with it, so the person
    at the demo can give commands; the audit trail records ``rocewatch-up`` as the actor. A config
    that names tokens is left alone (its holders sign in themselves). Returns the settings and
    the identity signed in ("" when none was minted)."""
    access = settings.access
    if access.tokens or access.tokens_file or settings.api.token.get_secret_value():
        return settings, ""
    secret = mint()
    entry = TokenEntry(name=SESSION_IDENTITY, role="admin", sha256=token_hash(secret))
    data = settings.model_dump(mode="python", by_alias=True)
    data["access"]["tokens"] = [entry.model_dump()]
    data["api"]["token"] = secret
    return Settings.model_validate(data), SESSION_IDENTITY


@click.command()
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
              envvar="ROCEWATCH_CONFIG", help="YAML config to start from (optional).")
@click.option("--scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=DEMO, show_default="the demo fabric", help="Scenario the lab plays.")
@click.option("--speed", type=float, default=1.0, show_default=True,
              help="Simulated seconds per wall second.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("var/up"), show_default=True)
@click.option("--api-port", type=int, default=8080, show_default=True)
@click.option("--dashboard-port", type=int, default=8501, show_default=True)
@click.option("--no-dashboard", is_flag=True, help="Do not start the Streamlit dashboard.")
def up(config_path: str | None, scenario: Path, speed: float, workdir: Path, api_port: int,
       dashboard_port: int, no_dashboard: bool) -> None:
    """Start the lab, every role and the dashboard; print the URLs; stop on Ctrl-C."""
    logging.getLogger().setLevel(min(logging.getLogger().level, logging.INFO))
    workdir.mkdir(parents=True, exist_ok=True)
    lab_dir = workdir / "lab"
    agents_path = lab_dir / "agents.json"
    agents_path.unlink(missing_ok=True)
    base = load_settings(config_path)
    api_port = _free_port(api_port)
    dashboard_port = _free_port(dashboard_port)
    exe = [sys.executable, "-m", "rocewatch"]
    lab_proc: subprocess.Popen[bytes] | None = None
    dash_proc: subprocess.Popen[bytes] | None = None
    platform: Platform | None = None
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        if platform is not None:
            platform.stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        click.echo(f"starting the lab: {scenario} at speed {speed:g}")
        lab_proc = subprocess.Popen(
            [*exe, "lab", "run", str(scenario), "--speed", str(speed), "--out", str(lab_dir)],
            stdout=(workdir / "lab.log").open("wb"), stderr=subprocess.STDOUT)
        agents = _wait_for(agents_path, lab_proc, timeout=120)
        settings = platform_settings(base, workdir, agents_path, agents, api_port)
        settings, signed_in = with_session_token(settings)
        platform = Platform(settings, ALL_ROLES)
        platform.start()
        api_url = f"http://127.0.0.1:{api_port}"
        if not no_dashboard:
            options = DashboardOptions.from_settings(settings.api, settings.dashboard, api_url)
            dash_proc = subprocess.Popen(
                command(options, "127.0.0.1", dashboard_port), env=environment(options, os.environ),
                stdout=(workdir / "dashboard.log").open("wb"), stderr=subprocess.STDOUT)
        _wait_http(f"{api_url}/healthz", 30)
        click.echo("")
        click.echo("rocewatch is up")
        if not no_dashboard:
            click.echo(f"  dashboard       http://127.0.0.1:{dashboard_port}/")
            if signed_in:
                click.echo(f"                  signed in as {signed_in} (admin, this run only)")
        click.echo(f"  API             {api_url}/docs")
        if agents.get("te_controller"):
            click.echo(f"  TE controller   {agents['te_controller']}/v1/state")
        click.echo(f"  lab             {len(agents.get('switches', []))} switches, "
                   f"logs in {workdir}/")
        click.echo("  faults          the demo corrupts a fabric link ~60 s in; a NIC sticks "
                   "at ~180 s")
        click.echo("Ctrl-C stops everything.")
        while not stopping and not platform.stop_event.wait(1.0):
            if lab_proc.poll() is not None:
                click.echo(f"the lab stopped (exit {lab_proc.returncode}); stopping", err=True)
                break
            if dash_proc is not None and dash_proc.poll() is not None:
                click.echo(f"the dashboard stopped (exit {dash_proc.returncode}); see "
                           f"{workdir}/dashboard.log", err=True)
                dash_proc = None
    finally:
        click.echo("stopping ...")
        if platform is not None:
            platform.stop()
        _stop(dash_proc, "dashboard")
        _stop(lab_proc, "lab")
