"""``rocewatch query ...`` against the live API: tables, JSON, and errors as one line."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from rocewatch.cli.main import cli
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.server import Running


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["query", *args])
    return result.exit_code, result.output


def test_alerts_table_and_json(live_api: Running) -> None:
    code, out = run("alerts", "--incidents", "--api", live_api.url)
    assert code == 0, out
    header, _rule, row = out.strip().splitlines()
    assert header.split()[:3] == ["severity", "alert", "entity"]
    assert row.split()[:4] == ["critical", "faulty_link", FAULTY_LINK, "incident"]
    code, out = run("alerts", "--since", "10m", "--name", "pfc_storm", "--json",
                    "--api", live_api.url)
    body = json.loads(out)
    assert body["mode"] == "range"
    assert [(a["entity"], a["status"]) for a in body["alerts"]] == [("host1", "resolved")]


def test_series_table(live_api: Running) -> None:
    code, out = run("series", "leaf3", "Ethernet4", "if_in_fcs_errors", "pfc_rx_frames",
                    "--since", "30s", "--step", "10s", "--api", live_api.url)
    assert code == 0, out
    lines = out.strip().splitlines()
    assert "if_in_fcs_errors (frames/s)" in lines[0] and "pfc_rx_frames[3] (frames/s)" in lines[0]
    assert lines[-1].split()[-2:] == ["500", "2"]


def test_actions_and_status(live_api: Running) -> None:
    code, out = run("actions", "--outcome", "done", "--api", live_api.url)
    assert code == 0 and "would drain leaf3~spine2" in out
    code, out = run("status", "--api", live_api.url)
    assert code == 0 and "telemetry live" in out
    assert out.splitlines()[3].split()[:4] == ["critical", FAULTY_LINK, "link", "faulty_link"]


def test_errors_say_what_to_fix(live_api: Running) -> None:
    result = CliRunner().invoke(cli, ["query", "series", "leaf3", "Ethernet4", "nope",
                                      "--api", live_api.url])
    assert result.exit_code != 0 and "unknown metric 'nope'" in str(result.exception)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    result = CliRunner().invoke(cli, ["query", "alerts", "--api", dead])
    assert "did not answer" in str(result.exception) and dead in str(result.exception)


def test_without_api_the_config_names_the_api(live_api: Running, tmp_path: Path) -> None:
    """``-c`` (or ROCEWATCH_CONFIG) and the one loader say where the API is."""
    port = int(live_api.url.rsplit(":", 1)[1])
    config = tmp_path / "rocewatch.yaml"
    config.write_text(f"api:\n  host: 127.0.0.1\n  port: {port}\n")
    code, out = run("status", "-c", str(config))
    assert code == 0 and "telemetry live" in out, out
    result = CliRunner().invoke(cli, ["query", "alerts", "--incidents"],
                                env={"ROCEWATCH_CONFIG": str(config)})
    assert result.exit_code == 0 and FAULTY_LINK in result.output, result.output
    # the environment overrides the file, as for every process
    result = CliRunner().invoke(cli, ["query", "alerts", "-c", str(config)],
                                env={"ROCEWATCH_API__PORT": "1"})
    assert "127.0.0.1:1 did not answer" in str(result.exception)
