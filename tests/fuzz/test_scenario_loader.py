"""Property-based tests of the scenario loader (``lab/scenario/load.py``): whatever a scenario
file holds, text or a mutated valid scenario, the loader raises nothing but
:class:`~pipeline.errors.ConfigError`; and every scenario the generator writes reads back as
the scenario it describes."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from lab.scenario.load import load_scenario, parse_scenario
from pipeline.errors import ConfigError
from rocewatch.scenario.generate import generate
from tests.fuzz.budget import budget
from tests.fuzz.mutate import mutated

SHARED = sorted((Path(__file__).resolve().parents[3] / "shared" / "scenarios").glob("*.yaml"))
#: a valid scenario to mutate: the generator's, or one of the shared guide's when it is there
BASES = [generate(7, i) for i in range(3)] + [yaml.safe_load(p.read_text()) for p in SHARED[:3]]


def only_config_error(data: Any) -> None:
    with contextlib.suppress(ConfigError):
        parse_scenario(data)


@budget(0.3)
@given(st.integers(0, 10**6), st.integers(0, 999))
def test_every_generated_scenario_reads_back_as_itself(seed: int, index: int) -> None:
    doc = generate(seed, index)
    parsed = parse_scenario(doc)
    again = parse_scenario(yaml.safe_load(yaml.safe_dump(doc)))
    assert again == parsed and parsed.name == doc["name"]
    assert len(parsed.faults) == len(doc["faults"])


@budget(0.5)
@given(st.sampled_from(range(len(BASES))).flatmap(lambda i: mutated(BASES[i])))
def test_a_mutated_scenario_is_read_or_refused_with_a_config_error(doc: Any) -> None:
    only_config_error(doc)


@budget(0.5)
@given(st.text(max_size=300) | st.sampled_from((
    "format: 1\nformat: 1\n", "? [a, b]\n: 1\n", "? {a: 1}\n: 2\n", "a: &x [*x]\n",
    "!!python/object:os.system {}\n", "format: !!binary aGVsbG8=\n", "- 1\n- 2\n")))
def test_any_text_is_read_or_refused_with_a_config_error(tmp_path_factory: Any,
                                                         text: str) -> None:
    path = tmp_path_factory.mktemp("scenario") / "s.yaml"
    path.write_text(text, errors="surrogatepass")
    with contextlib.suppress(ConfigError):
        load_scenario(path)
