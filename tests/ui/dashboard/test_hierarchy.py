"""The dashboard on three tiers under Streamlit's AppTest, reading a live API on loopback: the
zones worst first with the storm's pause tree drawn over them, a zone and a switch on demand, and
the heat map of the ports that matter (searchable)."""

from __future__ import annotations

import html
import re
import sys

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.conftest import StormStore
from tests.ui.dashboard.test_dashboard import DASHBOARD, html_of
from tests.ui.dashboard.test_hierarchy_svg import healthy
from tests.ui.three_tier import CLIMB, CORRUPT, DRAIN_RUN, DRAINED, ROOT_HOST
from ui.api.server import Running


def run_dashboard(monkeypatch: pytest.MonkeyPatch, url: str) -> AppTest:
    monkeypatch.setattr(sys, "argv", [DASHBOARD, "--api", url])
    # a page of a dozen requests: generous on a machine whose two cores are shared
    at = AppTest.from_file(DASHBOARD, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def levels(page: str, tag: str = "g") -> dict[str, str]:
    return {html.unescape(e): v for e, v in
            re.findall(rf'<{tag}[^>]* data-entity="([^"]+)" data-level="([a-z]+)"', page)}


def heat_rows(page: str) -> list[str]:
    return [html.unescape(p) for p in re.findall(r'<tr class="rw-heat-row" data-port="([^"]+)"',
                                                 page)]


def test_the_zones_with_the_storms_pause_tree(monkeypatch: pytest.MonkeyPatch,
                                              storm_api: Running,
                                              storm_store: StormStore) -> None:
    at = run_dashboard(monkeypatch, storm_api.url)
    page = html_of(at)
    assert 'class="rw-banner" data-level="critical"' in page
    assert f"pfc_storm on {ROOT_HOST}" in page and f"faulty_link on {CORRUPT}" in html.unescape(
        page)
    assert 'data-mode="overview"' in page
    tiles = levels(page)
    # every switch drawn: the ones not ok (or in maintenance) as tiles, the rest one path a group
    assert len([t for t in tiles if ":" not in t and "~" not in t]) + sum(
        healthy(page).values()) == 12
    assert tiles["z1-leaf1"] == "critical"
    assert {tiles[sw] for _, sw in CLIMB[1:]} == {"warning"}
    # the storm's tree (the worst incident, chosen by default): one line per switch-to-switch hop
    drawn = sorted(html.unescape(e) for e in re.findall(
        r'<line class="rw-tree" data-entity="([^"]+)"', page))
    assert drawn == sorted(hop for hop, _ in CLIMB[1:])
    assert "root: host2" in page
    assert page.count("<tr><td") >= len(CLIMB)  # the hops' table: who pauses whom
    # the heat map ranks the paused ports first
    rows = heat_rows(page)
    assert set(rows[:len(CLIMB)]) == set(storm_store.fabric.paused_ports())
    # the drained link: in maintenance by its run, since when; counted beside the links
    [held] = re.findall(r'<div class="rw-maintenance" data-entity="([^"]+)" data-state="held"',
                        page)
    assert held == DRAINED and f"by run {DRAIN_RUN}" in page
    assert "; 1 drained" in {m.label: m.delta for m in at.metric}["Links not ok"]
    assert not at.warning, [w.value for w in at.warning]


def test_a_zone_a_switch_and_a_search(monkeypatch: pytest.MonkeyPatch,
                                      storm_api: Running) -> None:
    at = run_dashboard(monkeypatch, storm_api.url)
    at.button_group(key="fabric_group").set_value("z2").run()
    assert not at.exception, at.exception
    page = html_of(at)
    assert 'data-mode="group"' in page
    tiles = levels(page)
    assert tiles["z2-leaf3"] == tiles["z2-spine2"] == "critical"  # the corrupting link's ends
    assert "z1-leaf1" not in tiles  # another zone is not drawn
    assert {r.split(":")[0] for r in heat_rows(page)} <= {
        "z2-spine1", "z2-spine2", "z2-leaf1", "z2-leaf2", "z2-leaf3"}
    at.selectbox(key="fabric_switch").set_value("z2-spine1").run()
    page = html_of(at)
    ports = levels(page, "span")
    assert ports["z2-spine1:Ethernet4"] == "warning"  # paused by agg1
    assert {r.split(":")[0] for r in heat_rows(page)} == {"z2-spine1"}
    at.selectbox(key="fabric_switch").set_value("").run()
    at.text_input(key="search").input("agg2").run()
    rows = heat_rows(html_of(at))
    assert rows and all(r.startswith("z2-spine") for r in rows)  # z2's ports that reach agg2
    assert not at.exception, at.exception
