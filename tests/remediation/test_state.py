"""The remediation state file: a version-1 file (times spelled ``*_at_ns``) loads as version 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from remediation import state
from remediation.alerting.silences import Silences

NS = 1_000_000_000


def test_a_version_1_state_is_upgraded_on_load(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "silences": [
        {"id": "s1", "matchers": ['entity="leaf1~spine1"'], "starts_at_ns": 10 * NS,
         "ends_at_ns": 70 * NS, "created_by": "alice", "comment": "maintenance"}]}))
    data = state.load(path)
    assert data["version"] == state.VERSION == 2
    silences = Silences()
    state.restore(data, None, silences)
    (silence,) = silences.all()
    assert (silence.starts_ns, silence.ends_ns) == (10 * NS, 70 * NS)
    assert silence.active(30 * NS) and not silence.active(80 * NS)


def test_a_saved_state_loads_back_and_an_unknown_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    silences = Silences()
    silences.add(['entity="leaf2~spine1"'], 5 * NS, 65 * NS, "bob", "")
    state.save(path, state.snapshot(None, silences))
    again = Silences()
    state.restore(state.load(path), None, again)
    assert [(s.starts_ns, s.ends_ns) for s in again.all()] == [(5 * NS, 65 * NS)]
    path.write_text(json.dumps({"version": 3}))
    with pytest.raises(ConfigError, match="not version 2"):
        state.load(path)
