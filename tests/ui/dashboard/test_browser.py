"""A real browser on the real dashboard: the API (uvicorn, loopback) over a store holding an
injected fault, ``streamlit run ui/dashboard/app.py`` in its own process, and Debian's Chromium
driven by Playwright. On two tiers the faulty link must be drawn red and named; on three tiers
(two zones and an aggregation tier) the storm's leaf red in its zone, its pause tree drawn across
the aggregation tier, the paused ports first in the heat map and the drained link in maintenance.
Each page is saved as a screenshot under ``var/screenshots/`` for a person to look at.

In CI (CI=true) a missing Chromium is a failure, not a skip.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.ui.conftest import FabricStore, StormStore
from tests.ui.three_tier import CLIMB, DRAINED, ROOT_HOST
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.server import Running
from ui.dashboard.launch import DashboardOptions, command

REPO = Path(__file__).parents[3]
CHROMIUM = "/usr/bin/chromium"
SHOT = REPO / "var" / "screenshots" / "dashboard-faulty-link.png"
SHOT_3 = REPO / "var" / "screenshots" / "dashboard-three-tier-storm.png"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
RED = "rgb(214, 39, 40)"  # ui.dashboard.style.COLOURS["critical"]
ORANGE = "rgb(242, 142, 43)"  # ui.dashboard.style.COLOURS["warning"]

pytestmark = pytest.mark.integration


def need_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    message = f"needs Chromium at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def streamlit(api_url: str, tmp_path: Path) -> Iterator[str]:
    """The dashboard as every launcher starts it (:func:`ui.dashboard.launch.command`) over the
    API at ``api_url``, on a free port; its URL."""
    port = free_port()
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(
        command(DashboardOptions(api_url), "127.0.0.1", port),
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HOME": str(tmp_path)})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "streamlit.log").read_text()
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=1).text == "ok":
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "streamlit did not come up in 60 s"
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@pytest.fixture
def dashboard(live_api: Running, tmp_path: Path) -> Iterator[str]:
    with streamlit(live_api.url, tmp_path) as url:
        yield url


@pytest.fixture
def storm_dashboard(storm_api: Running, tmp_path: Path) -> Iterator[str]:
    with streamlit(storm_api.url, tmp_path) as url:
        yield url


def test_chromium_shows_the_faulty_link_red_and_named(dashboard: str,
                                                      fabric_store: FabricStore) -> None:
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1150})
            page.goto(dashboard)
            banner = page.locator('.rw-banner[data-level="critical"]')
            banner.wait_for(timeout=45_000)
            page.locator("svg.rw-fabric").wait_for(timeout=30_000)
            page.wait_for_function(
                "!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)
            assert f"faulty_link on {FAULTY_LINK}" in banner.inner_text()
            # the picture: exactly one red line, and it is the faulty link
            red = page.locator('svg.rw-fabric line[data-level="critical"]')
            assert red.count() == 1
            assert red.get_attribute("data-entity") == FAULTY_LINK
            assert red.evaluate("e => getComputedStyle(e).stroke") == RED
            label = page.locator("svg.rw-fabric text", has_text=FAULTY_LINK)
            assert label.count() == 1 and label.is_visible()
            # the list: the faulty link first, as a red badge with its name
            first = page.locator(".rw-badge").first
            assert first.inner_text() == FAULTY_LINK
            assert first.evaluate("e => getComputedStyle(e).backgroundColor") == RED
            # every other link is not red
            ok_links = page.locator('svg.rw-fabric line[data-level="ok"][data-entity]')
            assert ok_links.count() == len(fabric_store.fabric.topology.links) - 1
            SHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOT), full_page=True)
        finally:
            browser.close()
    assert SHOT.stat().st_size > 50_000


def test_chromium_shows_three_tiers_the_storms_tree_and_the_ports_that_matter(
        storm_dashboard: str, storm_store: StormStore) -> None:
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 2600})
            page.goto(storm_dashboard)
            page.locator('svg.rw-hierarchy[data-mode="overview"]').wait_for(timeout=45_000)
            page.locator("table.rw-heatmap").wait_for(timeout=30_000)
            page.wait_for_function(
                "!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)
            banner = page.locator('.rw-banner[data-level="critical"]').inner_text()
            assert f"pfc_storm on {ROOT_HOST}" in banner
            # the root's leaf is a red tile in its zone's panel
            leaf = page.locator('svg.rw-hierarchy g[data-entity="z1-leaf1"] rect')
            assert leaf.evaluate("e => getComputedStyle(e).fill") == RED
            assert page.locator('svg.rw-hierarchy rect[data-group]').count() == 2  # z1, z2
            # the tree: a line per switch-to-switch hop, visible, and the root ringed
            lines = page.locator("svg.rw-hierarchy line.rw-tree")
            assert lines.count() == len(CLIMB) - 1
            # (a straight line's box may be zero wide: its stroke says it is drawn)
            assert {lines.nth(i).evaluate("e => getComputedStyle(e).stroke")
                    for i in range(lines.count())} == {ORANGE}
            assert page.locator("svg.rw-hierarchy circle.rw-tree-root").count() == 1
            # the heat map: the paused ports first, their PFC cells the darkest
            rows = page.locator("table.rw-heatmap tr.rw-heat-row")
            first = {rows.nth(i).get_attribute("data-port") for i in range(len(CLIMB))}
            assert first == set(storm_store.fabric.paused_ports())
            assert page.locator(f'.rw-maintenance[data-entity="{DRAINED}"]').is_visible()
            SHOT_3.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOT_3), full_page=True)
        finally:
            browser.close()
    assert SHOT_3.stat().st_size > 50_000
