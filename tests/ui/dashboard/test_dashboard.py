"""The Streamlit dashboard under Streamlit's AppTest, reading a live API on loopback."""

from __future__ import annotations

import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pipeline.config import StoreSettings
from pipeline.store.base import open_store
from pipeline.topology.model import spine_leaf
from tests.ui.conftest import FabricStore
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.app import create_app
from ui.api.server import Running, start_background
from ui.query.layer import Query

DASHBOARD = str(Path(__file__).parents[3] / "ui" / "dashboard" / "app.py")


def run_dashboard(monkeypatch: pytest.MonkeyPatch, url: str) -> AppTest:
    # what ``streamlit run ui/dashboard/app.py -- --api URL`` hands the script
    monkeypatch.setattr(sys, "argv", [DASHBOARD, "--api", url])
    at = AppTest.from_file(DASHBOARD, default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    return at


def open_tab(at: AppTest, tab: str) -> None:
    """Open one of the tabs at the bottom (only the open one runs)."""
    at.session_state["details"] = tab
    at.run()
    assert not at.exception, at.exception


def html_of(at: AppTest) -> str:
    return "\n".join(str(h.proto.body) for h in at.get("html")) + "\n".join(
        m.value for m in at.markdown)


def test_the_fault_is_red_and_named(monkeypatch: pytest.MonkeyPatch, live_api: Running,
                                    fabric_store: FabricStore) -> None:
    at = run_dashboard(monkeypatch, live_api.url)
    page = html_of(at)
    assert 'class="rw-banner" data-level="critical"' in page
    assert f"1 critical incident: faulty_link on {FAULTY_LINK}" in page
    # the picture colours the link red, and the list names it first
    assert 'data-entity="leaf3&#126;spine2" data-level="critical"' in page
    assert page.index(f'data-entity="{FAULTY_LINK}" data-level="critical"') < page.index(
        'data-level="warning"')
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Links not ok"] == "1" and metrics["Hosts not ok"] == "0"
    assert metrics["Incidents"] == "1"
    assert metrics["Telemetry"] == "live"
    assert any("faulty\\_link" in e.label and "leaf3\\~spine2" in e.label for e in at.expander)
    # the port drill-down is not read until its tab is opened; then it opens on the faulty
    # link's first end
    assert not [s for s in at.selectbox if s.key == "dd_dev"]
    open_tab(at, "Port drill-down")
    link = fabric_store.fabric.topology.link_by_id[FAULTY_LINK]
    assert at.selectbox(key="dd_dev").value == link.a.device
    assert at.selectbox(key="dd_port").value == link.a.name
    assert not at.warning, [w.value for w in at.warning]


def test_investigating_a_port_moves_the_drill_down(monkeypatch: pytest.MonkeyPatch,
                                                    live_api: Running,
                                                    fabric_store: FabricStore) -> None:
    at = run_dashboard(monkeypatch, live_api.url)
    link = fabric_store.fabric.topology.link_by_id[FAULTY_LINK]
    [button] = [b for b in at.button if b.label == str(link.b)]
    button.click().run()
    assert not at.exception
    assert at.selectbox(key="dd_dev").value == link.b.device
    assert at.selectbox(key="dd_port").value == link.b.name


def test_search_narrows_the_list(monkeypatch: pytest.MonkeyPatch, live_api: Running) -> None:
    at = run_dashboard(monkeypatch, live_api.url)
    at.text_input(key="search").input("host7").run()
    assert not at.exception
    assert any("Nothing matches" in m.value for m in at.markdown)
    at.text_input(key="search").input("spine2").run()
    page = html_of(at)
    assert f'data-entity="{FAULTY_LINK}"' in page and 'data-entity="leaf3:Ethernet4"' not in page


def test_an_unreachable_api_is_an_explicit_no_data(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    at = run_dashboard(monkeypatch, f"http://127.0.0.1:{port}")
    assert any("Cannot reach the rocewatch API" in e.value for e in at.error)
    assert 'data-level="nodata"' in html_of(at)


@pytest.fixture
def empty_api(chdb_dir: Path) -> Iterator[Running]:
    store = open_store(StoreSettings(kind="chdb", chdb_path=str(chdb_dir),
                                     database=f"empty{uuid.uuid4().hex[:8]}"))
    running = start_background(create_app(Query(store, spine_leaf(2, 2, 1))))
    yield running
    running.stop()
    store.execute(f"DROP DATABASE IF EXISTS {store.database}")


def test_an_empty_store_says_no_telemetry(monkeypatch: pytest.MonkeyPatch,
                                          empty_api: Running) -> None:
    at = run_dashboard(monkeypatch, empty_api.url)
    page = html_of(at)
    assert 'data-level="nodata"' in page and "No telemetry yet" in page
    assert 'data-level="critical"' not in page


def test_every_drill_down_range_fits_the_api(monkeypatch: pytest.MonkeyPatch,
                                             live_api: Running) -> None:
    at = run_dashboard(monkeypatch, live_api.url)
    open_tab(at, "Port drill-down")
    for span in ("5m", "1h", "6h", "24h", "7d"):
        at.button_group(key="dd_span").set_value(span).run()
        assert not at.exception
        refused = [w.value for w in at.warning] + [e.value for e in at.error]
        assert refused == [], (span, refused)
        assert any(f"last {span} of fabric time" in c.value for c in at.caption), span
