"""``rocewatch bench collect --part peer``: skips cleanly without the other collector, and with one
(a tiny pygnmi subscriber of our own) measures both against the same lab switches in one run.
Behaviour only: what was counted and printed, never how fast."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from rocewatch.bench.collect import collect
from rocewatch.bench.side_by_side import OutputTally, missing_program, peer_argv, side_by_side

PEER = Path(__file__).with_name("pygnmi_peer.py")


def test_peer_part_skips_when_the_command_is_missing() -> None:
    runner = CliRunner()
    result = runner.invoke(collect, ["--part", "peer", "--peer-command",
                                     "rw-no-such-collector -a {addresses} subscribe"])
    assert result.exit_code == 0, result.output
    assert "peer: skipped: 'rw-no-such-collector' is not on this machine" in result.output
    assert "side by side" not in result.output
    result = runner.invoke(collect, ["--part", "peer"])
    assert result.exit_code == 0, result.output
    assert "peer: skipped: no --peer-command given" in result.output


def test_missing_program_finds_real_programs() -> None:
    assert missing_program(f"{sys.executable} -c pass") is None
    assert missing_program("") is not None
    assert missing_program("   ") is not None


def test_peer_argv_fills_placeholders_and_writes_targets(tmp_path: Path) -> None:
    agents = {"sample_interval_s": 1.0, "switches": [
        {"name": "leaf1", "gnmi": {"address": "127.0.0.1:5001", "profile": "sonic",
                                   "username": "u", "password": "p w"}},
        {"name": "snmp1"},
        {"name": "leaf2", "gnmi": {"address": "127.0.0.1:5002", "profile": "arista",
                                   "username": "u", "password": "p w"}}]}
    argv = peer_argv("peer -a {addresses} -u {username} -p '{password}' -f {targets_file} "
                     "--interval {interval}s", agents, tmp_path / "t.json")
    assert argv == ["peer", "-a", "127.0.0.1:5001,127.0.0.1:5002", "-u", "u", "-p", "p w",
                    "-f", str(tmp_path / "t.json"), "--interval", "1s"]
    written = json.loads((tmp_path / "t.json").read_text())
    assert [t["name"] for t in written] == ["leaf1", "leaf2"]
    assert written[1] == {"name": "leaf2", "address": "127.0.0.1:5002", "profile": "arista",
                          "username": "u", "password": "p w", "sample_interval_s": 1.0}


def test_output_tally_counts_notifications_in_any_layout() -> None:
    tally = OutputTally()
    pretty = json.dumps({"source": "a", "updates": [{"Path": "x"}, {"Path": "y"}]}, indent=2)
    half = len(pretty) // 2
    tally.feed(pretty[:half])
    assert tally.snapshot() == (0, 0)  # an incomplete object waits for the rest
    tally.feed(pretty[half:] + "\n")
    tally.feed('{"source": "b", "updates": [{"p": 1}]}\n{"sync-response": true}\n')
    tally.feed("a log line from the peer\n")
    tally.feed(json.dumps([{"updates": []}, {"updates": [1, 2, 3]}]) + "\n")
    assert tally.snapshot() == (4, 6)
    assert tally.other == 2


def test_peer_part_measures_both_collectors_on_the_same_switches(tmp_path: Path) -> None:
    command = f"{sys.executable} {PEER} {{targets_file}}"
    result = side_by_side(tmp_path, command, seconds=3.0, speed=20.0, spines=2, leaves=2,
                          hosts=2, warmup=3.0)
    assert result is not None
    ours, theirs = result
    # both received notifications from the lab in the same window, and each used CPU for them
    assert ours.notifications > 0 and ours.updates > 0 and ours.cpu_s > 0
    assert theirs.notifications > 0 and theirs.cpu_s > 0
    assert theirs.updates >= theirs.notifications  # every notification of the lab has updates
    targets = json.loads((tmp_path / "peer-targets.json").read_text())
    assert len(targets) == 4  # the peer was given every gNMI switch of the lab
