"""``rocewatch bench dashboard``: how long the dashboard takes to load in a real browser on the
24,576-GPU reference fabric.

The store is one ``rocewatch bench query --fabric reference --dir DIR`` filled (reused when
``--dir`` holds it, else filled here: :mod:`rocewatch.bench.reference`). The API serves it from
this process (uvicorn on loopback), the dashboard runs as ``streamlit run`` in its own process
(:func:`ui.dashboard.launch.command`), and Debian's Chromium, driven by Playwright, opens the page
``--runs`` times, each in a fresh browser context (a new session: nothing cached in the page).
Per load it measures, from navigation: the banner, the fabric picture, the heat map, and the
page idle (Streamlit's running indicator gone, every section drawn). The first load after the
API starts is reported apart (its reads are cold). ``--shots DIR`` saves the overview with the
storm's pause tree, one zone's detail and one switch's ports. It prints what it measured; it
asserts nothing.
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
from ui.dashboard.launch import DashboardOptions, command
from ui.query.layer import Query, StatusOptions

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
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
@click.option("--shots", type=click.Path(file_okay=False), default=None,
              help="Save screenshots of the overview and a zone here.")
def dashboard(path: str | None, intervals: int, runs: int, shots: str | None) -> None:
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
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = Path(tmp) / "streamlit.log"
        proc = subprocess.Popen(
            command(DashboardOptions(api.url, 10.0), "127.0.0.1", port),
            stdout=log.open("w"), stderr=subprocess.STDOUT, env={**os.environ, "HOME": tmp})
        loads: list[dict[str, float]] = []
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/_stcore/health", timeout=1).text == "ok":
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                for _ in range(runs + 1):
                    context = browser.new_context(viewport={"width": 1500, "height": 1150})
                    loads.append(_load(context.new_page(), url))
                    context.close()
                if shots:
                    context = browser.new_context(viewport={"width": 1500, "height": 2400})
                    for shot in _shots(context.new_page(), url, Path(shots)):
                        click.echo(f"saved {shot}")
                    context.close()
                browser.close()
        finally:
            proc.terminate()
            proc.wait(15)
            api.stop()
            store.close()
    click.echo(f"reference fabric: {len(topology.switches)} switches, "
               f"{topology.n_switch_ports:,} ports; load average {os.getloadavg()[0]:.1f}; "
               f"Chromium {runs} loads after a first one, each in a fresh context, ms from "
               f"navigation")
    click.echo("| mark | first load | p50 | max |")
    click.echo("|---|---:|---:|---:|")
    for name in [m for m, _ in MARKS] + ["page idle"]:
        later = sorted(load[name] for load in loads[1:])
        click.echo(f"| {name} | {loads[0][name]:.0f} | {statistics.median(later):.0f} | "
                   f"{later[-1]:.0f} |")
