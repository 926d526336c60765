"""Fixtures for the lab's tests: small scenarios, a running mixed-dialect lab, leak checks."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.runtime import Lab
from lab.scenario.load import parse_scenario
from lab.scenario.spec import Scenario
from tests.collectors.conftest import running_lab

SCENARIOS = Path(__file__).resolve().parent / "scenarios"   # copies of shared/scenarios

BASE: dict[str, Any] = {
    "format": 1, "name": "test", "seed": 3, "duration_s": 60, "sample_interval_s": 1,
    "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2},
    "routing": "ecmp",
    "traffic": [{"pattern": "allreduce", "hosts": "all", "load": 0.5, "qps_per_flow": 2}],
    "faults": [],
}


def scenario_dict(**over: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for key, value in over.items():
        if key == "fabric":
            doc["fabric"].update(value)
        else:
            doc[key] = value
    return doc


def make_scenario(**over: Any) -> Scenario:
    return parse_scenario(scenario_dict(**over))


@pytest.fixture(autouse=True, scope="session")
def _quiet_client_threads() -> Iterator[None]:
    # pygnmi's subscriber threads report the CANCELLED of a closed stream as an exception
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if "CANCELLED" in repr(args.exc_value) or "Channel closed" in repr(args.exc_value):
            return
        previous(args)

    threading.excepthook = hook
    yield
    threading.excepthook = previous


MIXED = scenario_dict(
    name="mixed-agents", duration_s=3600,
    fabric={"spines": 2, "leaves": 4, "hosts_per_leaf": 2, "agents": {"gnmi": 0.5, "snmp": 0.5},
            "profiles": ["openconfig", "arista", "sonic"]},
    traffic=[{"pattern": "allreduce", "hosts": "all", "load": 0.6, "qps_per_flow": 2}],
)


@pytest.fixture(scope="package")
def mixed_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """spine1 openconfig, spine2 SNMP, leaf1 arista, leaf2 SNMP, leaf3 sonic, leaf4 SNMP."""
    with running_lab(MIXED, 20.0, tmp_path_factory.mktemp("mixed"), until=2.0) as lab:
        yield lab


def gnmi_target(lab: Lab, switch: str) -> tuple[str, int]:
    entry = next(s for s in lab.agents()["switches"] if s["name"] == switch)
    host, port = entry["gnmi"]["address"].split(":")
    return host, int(port)


def snmp_target(lab: Lab, switch: str) -> tuple[str, int]:
    entry = next(s for s in lab.agents()["switches"] if s["name"] == switch)
    host, port = entry["snmp"]["address"].split(":")
    return host, int(port)
