"""The remediation state that must survive a restart: runs that hold the fabric (a drained link
must never be forgotten), proposals waiting on a guard, the recent action history the rate limit
and cool-downs count, the stop-automation latch, and the silences.

Written as one JSON file, atomically (write a temporary file, then rename), whenever the audit
trail grew; read once when the router starts. Alerts themselves are not kept: the detectors
re-publish the firing ones, and receivers deduplicate (fingerprints, dedup keys).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.model import Alert
from remediation.alerting.silences import Silence, Silences
from remediation.drains.guards import Proposal
from remediation.drains.runbook import Drainer
from remediation.drains.runs import Run

log = logging.getLogger("rocewatch.remediation.state")
VERSION = 2
#: version 1 spelled the times of alerts and silences ``*_at_ns``; version 2 as everywhere else
_V1_NAMES = {"starts_at_ns": "starts_ns", "updated_at_ns": "updated_ns", "ends_at_ns": "ends_ns"}


def snapshot(drainer: Drainer | None, silences: Silences) -> dict[str, Any]:
    out: dict[str, Any] = {"version": VERSION,
                           "silences": [s.to_json() for s in silences.all()]}
    if drainer is not None:
        out.update({
            "runs": [r.to_json() for r in drainer.active.values()],
            "deferred": [{"runbook": p.runbook, "target": p.target,
                          "ports": [str(x) for x in p.ports], "alert": p.alert.model_dump(),
                          "attempts": n} for p, n in drainer.deferred.values()],
            "started_ns": drainer.started_ns,
            "last_finished_ns": drainer.last_finished_ns,
            "target_finished_ns": drainer.target_finished_ns,
            "halted": drainer.halted,
        })
    return out


def save(path: str | Path, data: dict[str, Any]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    os.replace(tmp, path)


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"remediation state {path} is unreadable ({exc}); move it aside to "
                          "start afresh, after checking no link is left drained") from exc
    if isinstance(data, dict) and data.get("version") == 1:
        upgraded: dict[str, Any] = _renamed(data)
        return {**upgraded, "version": VERSION}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ConfigError(f"remediation state {path} is not version {VERSION}")
    return data


def _renamed(value: Any) -> Any:
    """A version-1 snapshot with its time fields under their version-2 names."""
    if isinstance(value, dict):
        return {_V1_NAMES.get(k, k): _renamed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v) for v in value]
    return value


def restore(data: dict[str, Any], drainer: Drainer | None, silences: Silences) -> None:
    """Put a snapshot back (a ConfigError names what is wrong with it)."""
    from pipeline.topology.model import Port

    try:
        for s in data.get("silences", []):
            if str(s.get("id", "")).startswith("runbook-"):
                continue  # a drain's silence (before maintenance muted what drains cause)
            silences.put(Silence.from_json(s))
        if drainer is None:
            return
        known = set(drainer.topology.link_by_id) | set(drainer.topology.host_by_name)
        for raw in data.get("runs", []):
            run = Run.from_json(raw)
            if run.target not in known:  # a state file from another fabric (or scenario)
                log.error("state names %s (%s), which this topology does not have: ignored; "
                          "check it by hand", run.target, run.phase)
                continue
            drainer.runs[run.id] = run
            drainer.active[run.target] = run
            drainer.telemetry.watch(run.ports)
        for raw in data.get("deferred", []):
            if raw["target"] not in known:
                continue
            proposal = Proposal(raw["runbook"], raw["target"],
                                tuple(Port.parse(p) for p in raw["ports"]),
                                Alert.model_validate(raw["alert"]))
            drainer.deferred[proposal.target] = (proposal, int(raw["attempts"]))
        drainer.started_ns = [int(t) for t in data.get("started_ns", [])]
        last = data.get("last_finished_ns")
        drainer.last_finished_ns = int(last) if last is not None else None
        drainer.target_finished_ns = {k: int(v) for k, v in
                                      data.get("target_finished_ns", {}).items()}
        drainer.halted = data.get("halted")
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"remediation state is damaged: {exc}") from exc
    if drainer.active:
        log.warning("restored %d runbook run(s) holding the fabric: %s", len(drainer.active),
                    ", ".join(f"{t} ({r.phase})" for t, r in drainer.active.items()))
