"""The front door's command line: ``--role a,b,c`` is ``--role`` repeated, and ``run`` refuses a
config ``check-config`` refuses, with the same one-line error, before it starts anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from rocewatch.app import parse_roles


def rocewatch(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocewatch", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def test_roles_repeat_or_separate_with_commas() -> None:
    assert parse_roles(["collect,ingest,api"]) == ("collect", "ingest", "api")
    assert parse_roles(["collect", "ingest,api", " detect , collect"]) == \
        ("collect", "ingest", "api", "detect")
    assert parse_roles([]) == ()
    with pytest.raises(ConfigError, match=r"unknown role.*inject; roles: collect, ingest"):
        parse_roles(["collect,inject"])


def test_check_config_takes_comma_separated_roles(tmp_path: Path) -> None:
    config = tmp_path / "rocewatch.yaml"
    config.write_text("remediation: {receivers: []}\n")
    ok = rocewatch("check-config", "-c", str(config), "--role", "collect,ingest,api",
                   cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().endswith("valid")
    split = rocewatch("check-config", "-c", str(config), "--role", "collect,ingest", cwd=tmp_path)
    assert split.returncode == 2 and "store.kind: the embedded chDB store" in split.stderr


def test_run_refuses_a_missing_targets_file_with_the_error_of_check_config(
        tmp_path: Path) -> None:
    config = tmp_path / "rocewatch.yaml"
    config.write_text("collectors:\n  - {type: gnmi, name: fabric, targets: targets.yaml}\n"
                      "remediation: {receivers: []}\n")
    checked = rocewatch("check-config", "-c", str(config), cwd=tmp_path)
    ran = rocewatch("run", "-c", str(config), "--role", "collect,ingest,api", cwd=tmp_path)
    assert checked.returncode == ran.returncode == 2
    want = (f"rocewatch: collectors[0].targets: file targets.yaml does not exist (relative to "
            f"{tmp_path})\n")
    assert checked.stderr == want
    assert ran.stderr.endswith(want) and ran.stderr.count("\n") == 1, ran.stderr
    assert not (tmp_path / "var").exists()  # nothing was started: no store was created
