"""``rocewatch bench dashboard``: how long the dashboard takes to load in a real browser on the
24,576-GPU reference fabric.

The store is one ``rocewatch bench query --fabric reference --dir DIR`` filled (reused when
``--dir`` holds it, else filled here: :mod:`rocewatch.bench.reference`). The API serves it from
this process (uvicorn on loopback), the dashboard runs as ``streamlit run`` in its own process
(:func:`ui.dashboard.launch.command`), and Debian's Chromium, driven by Playwright, opens the page
``--runs`` times, each in a fresh browser context (a new session: nothing cached in the page). Per
load it measures, from navigation: the banner, the fabric picture, the heat map, and the page idle
(Streamlit's running indicator gone, every section drawn). The first load after the API starts is
reported apart (its reads are cold). ``--returning`` opens every load as a new tab of one browser
profile instead, as an operator's own browser does: a new Streamlit session each time, but the
hashed JavaScript bundles Streamlit serves as ``immutable`` come from the browser's cache after the
first load (the first load is the first visit). Loads follow each other at once, so a load may find
the answers an earlier one read still kept (the dashboard reuses them within one refresh window,
:mod:`ui.dashboard.reads`; the API keeps some for a few seconds); ``--gap SECONDS`` waits that long
before each load, longer than both, so every load reads cold. ``--floor`` first times the same
loads of :mod:`rocewatch.bench.dashboard_floor` (Streamlit with the three marks and nothing else):
what Streamlit costs on this machine before the dashboard's own work. ``--shots DIR`` saves the
overview with the storm's pause tree, one zone's detail and one switch's ports. It prints what it
measured; it asserts nothing.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import httpx

from pipeline.config import StoreSettings
from pipeline.store.base import Store, open_store
from rocewatch.bench.query import SERIES
from rocewatch.bench.reference import SHAPE
from rocewatch.bench.reference import fill as reference_fill
from ui.api.app import create_app
from ui.api.server import start_background
from ui.dashboard.launch import APP, DashboardOptions, command
from ui.query.layer import Query, StatusOptions

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
FLOOR = Path(__file__).with_name("dashboard_floor.py")
MARKS = (("banner", ".rw-banner"), ("fabric picture", "svg.rw-hierarchy"),
         ("heat map", "table.rw-heatmap"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _filled(store: Store) -> bool:
    try:
        return int(store.query(f"SELECT count() AS n FROM {store.database}.samples")["n"][0]) > 0
    except Exception:  # no database or table yet: fill it
        return False


def _load(page: Any, url: str) -> dict[str, float]:
    t0 = time.perf_counter()
    page.goto(url)
    out = {}
    for name, selector in MARKS:
        page.locator(selector).first.wait_for(timeout=120_000)
        out[name] = (time.perf_counter() - t0) * 1000
    page.wait_for_function(IDLE, timeout=120_000)
    out["page idle"] = (time.perf_counter() - t0) * 1000
    return out


def _serve(script: Path, options: DashboardOptions,
           tmp: str) -> tuple[subprocess.Popen[bytes], str]:
    """``streamlit run script`` as the dashboard is run, once it answers; its URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(script) if a == str(APP) else a for a in command(options, "127.0.0.1", port)]
    log = Path(tmp) / f"{script.stem}.log"
    proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "HOME": tmp})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/_stcore/health", timeout=1).text == "ok":
                break
        except httpx.TransportError:
            time.sleep(0.2)
    return proc, url


def _cpu_s(pids: set[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> set[int]:
    """``root`` and every process under it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def _loads(browser: Any, url: str, runs: int, gap: float, dashboard_pid: int,
           returning: bool = False) -> list[dict[str, float]]:
    """A first load and ``runs`` more, each in a fresh context (``gap`` seconds apart), or each
    in a new tab of one context when ``returning``, with the CPU seconds each took in the
    dashboard's process and in everything else this command runs (the API, Playwright,
    Chromium)."""
    viewport = {"width": 1500, "height": 1150}
    kept = browser.new_context(viewport=viewport) if returning else None
    loads = []
    for i in range(runs + 1):
        if i and gap:
            time.sleep(gap)
        rest = _descendants(os.getpid()) - _descendants(dashboard_pid)
        before = _cpu_s({dashboard_pid}), _cpu_s(rest)
        context = kept or browser.new_context(viewport=viewport)
        page = context.new_page()
        load = _load(page, url)
        rest |= _descendants(os.getpid()) - _descendants(dashboard_pid)
        load["CPU ms: dashboard process"] = (_cpu_s({dashboard_pid}) - before[0]) * 1000
        load["CPU ms: API, Playwright, Chromium"] = (_cpu_s(rest) - before[1]) * 1000
        page.close()
        if kept is None:
            context.close()
        loads.append(load)
    if kept is not None:
        kept.close()
    return loads


def _table(title: str, loads: list[dict[str, float]]) -> None:
    click.echo(f"| {title} | first load | p50 | max |")
    click.echo("|---|---:|---:|---:|")
    for name in [m for m, _ in MARKS] + ["page idle", "CPU ms: dashboard process",
                                             "CPU ms: API, Playwright, Chromium"]:
        later = sorted(load[name] for load in loads[1:])
        click.echo(f"| {name} | {loads[0][name]:.0f} | {statistics.median(later):.0f} | "
                   f"{later[-1]:.0f} |")


def _shots(page: Any, url: str, where: Path) -> list[Path]:
    where.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    page.locator("table.rw-heatmap").wait_for(timeout=120_000)
    page.wait_for_function(IDLE, timeout=120_000)
    made = [where / "dashboard-reference-overview.png"]
    page.screenshot(path=str(made[0]), full_page=True)
    page.locator("[data-testid='stButtonGroup'] button", has_text="z3").first.click()
    page.locator('svg.rw-hierarchy[data-mode="group"]').wait_for(timeout=120_000)
    page.wait_for_function(IDLE, timeout=120_000)
    made.append(where / "dashboard-reference-zone.png")
    page.screenshot(path=str(made[1]), full_page=True)
    return made


@click.command("dashboard")
@click.option("--dir", "path", type=click.Path(file_okay=False), default=None,
              help="chDB directory holding `bench query --fabric reference` data (reused), "
                   "or where to fill it (default: a temporary one).")
@click.option("--intervals", type=int, default=60, show_default=True,
              help="Sample intervals to fill when the store is empty.")
@click.option("--runs", type=int, default=5, show_default=True, help="Page loads timed.")
@click.option("--gap", type=float, default=0.0, show_default=True,
              help="Seconds to wait before each timed load (more than the dashboard's refresh "
                   "window and the API's caches: every load reads cold).")
@click.option("--floor", is_flag=True,
              help="First time the same loads of a Streamlit page with only the three marks.")
@click.option("--shots", type=click.Path(file_okay=False), default=None,
              help="Save screenshots of the overview and a zone here.")
@click.option("--returning", is_flag=True,
              help="Every load a new tab of one browser profile (its cache kept), not a fresh "
                   "profile each time.")
def dashboard(path: str | None, intervals: int, runs: int, gap: float, floor: bool,
              shots: str | None, returning: bool) -> None:
    """Load time of the dashboard in Chromium over the reference fabric."""
    if not Path(CHROMIUM).exists():
        raise click.ClickException(f"needs Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="rocewatch-bench-") as tmp:
        store = open_store(StoreSettings(chdb_path=path or tmp, database="bench"))
        if not _filled(store):
            store.migrate()
            reference_fill(store, SERIES, intervals, progress=click.echo)
        topology = SHAPE.build()
        # the API with its default caches, as deployed; the stored data stands still, so it is
        # never called silent
        api = start_background(create_app(Query(store, topology, options=StatusOptions(
            silent_after_s=1e9))))
        options = DashboardOptions(api.url, 10.0)
        procs: list[subprocess.Popen[bytes]] = []
        floor_loads: list[dict[str, float]] = []
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                if floor:
                    proc, url = _serve(FLOOR, options, tmp)
                    procs.append(proc)
                    floor_loads = _loads(browser, url, runs, gap, proc.pid, returning)
                proc, url = _serve(APP, options, tmp)
                procs.append(proc)
                loads = _loads(browser, url, runs, gap, proc.pid, returning)
                if shots:
                    context = browser.new_context(viewport={"width": 1500, "height": 2400})
                    for shot in _shots(context.new_page(), url, Path(shots)):
                        click.echo(f"saved {shot}")
                    context.close()
                browser.close()
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(15)
            api.stop()
            store.close()
    click.echo(f"reference fabric: {len(topology.switches)} switches, "
               f"{topology.n_switch_ports:,} ports; load average {os.getloadavg()[0]:.1f}; "
               f"Chromium {runs} loads after a first one, each in "
               + ("a new tab of one profile" if returning else "a fresh context")
               + (f" {gap:g} s after the last" if gap else "") + ", ms from navigation")
    if floor_loads:
        _table("Streamlit alone (floor)", floor_loads)
        click.echo("")
    _table("mark", loads)
