"""Every detector is named after the symptom it raises: its entry point, module, class and
``symptom`` agree, each has golden cases beside this file, and together they raise every symptom."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from detectors.chain import build_detectors
from detectors.settings import DetectionSettings
from pipeline.kinds import CARRIER_FLAP, PORT_DOWN, SYMPTOMS

#: a detector that raises more than one symptom is named after what they share
MULTI = {"link_state": {CARRIER_FLAP, PORT_DOWN}}
EPS = sorted(entry_points(group="rocewatch.detectors"), key=lambda e: e.name)
HERE = Path(__file__).parent


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


@pytest.mark.parametrize("ep", EPS, ids=lambda e: e.name)
def test_entry_point_module_class_and_symptom_share_one_name(ep: EntryPoint) -> None:
    module, _, cls_name = ep.value.partition(":")
    assert module == f"detectors.rules.{ep.name}"
    assert cls_name == camel(ep.name)
    cls = ep.load()
    assert cls.name == ep.name
    assert getattr(cls, "symptom", ep.name) == ep.name
    assert ep.name in SYMPTOMS or ep.name in MULTI
    assert (HERE / f"test_{ep.name}.py").exists(), f"no golden cases for {ep.name}"


def test_the_detectors_raise_every_symptom_and_run_by_default() -> None:
    raised = {ep.name for ep in EPS if ep.name not in MULTI} | set().union(*MULTI.values())
    assert raised == set(SYMPTOMS)
    assert {d.name for d in build_detectors(DetectionSettings(), None)} == {e.name for e in EPS}
