"""Property-based tests of the config loaders (``pipeline/config.py``, ``rocewatch/settings.py``,
the targets inventory): whatever a config file, an environment or a targets file holds, loading
and checking raise nothing but the project's own errors (one line each); and a config that loads
reads back, written out again, as the same settings."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from pipeline.errors import ConfigError, RocewatchError
from pipeline.inventory import parse_inventory
from rocewatch.settings import Settings, check, load_settings
from tests.fuzz.budget import budget
from tests.fuzz.mutate import mutated, yaml_values

ROOT = Path(__file__).resolve().parents[2]
BASES = [yaml.safe_load((ROOT / "docker" / "config" / "rocewatch.yaml").read_text()),
         yaml.safe_load((ROOT / "rocewatch" / "demo.yaml").read_text()),
         {"remediation": {"receivers": [{"type": "webhook", "name": "w",
                                         "url": "http://127.0.0.1:1/x"}],
                          "silences": [{"matchers": ['alertname="x"'],
                                        "starts_at": "2026-12-01T02:00:00Z",
                                        "ends_at": "2026-12-01T04:00:00Z"}]},
          "detection": {"update_every_s": "500ms"}, "ingest": {"max_past_s": "2d"},
          "store": {"retention_check_s": "1h30m"}}]
TARGETS = yaml.safe_load((ROOT / "docker" / "config" / "targets.yaml").read_text())


def one_line(exc: RocewatchError) -> None:
    assert "\n" not in str(exc), str(exc)


def write(tmp: Path, doc: Any) -> Path:
    path = tmp / "rocewatch.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return path


def plain(value: Any) -> Any:
    """Settings as the YAML a person would write for them (secrets in clear, for the test)."""
    if isinstance(value, BaseModel):
        fields = {info.alias or k: plain(getattr(value, k))
                  for k, info in type(value).model_fields.items()}
        return {**fields, **{k: plain(v) for k, v in (value.model_extra or {}).items()}}
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


@budget(0.5)
@given(st.sampled_from(range(len(BASES))).flatmap(lambda i: mutated(BASES[i])))
def test_a_mutated_config_loads_or_is_refused_with_our_error_and_reads_back(
        tmp_path_factory: Any, doc: Any) -> None:
    path = write(tmp_path_factory.mktemp("cfg"), doc)
    try:
        settings = load_settings(path, env={})
    except ConfigError as exc:
        one_line(exc)
        return
    try:
        check(settings, ("ingest", "api"))
    except RocewatchError as exc:
        one_line(exc)
    again = load_settings(write(tmp_path_factory.mktemp("again"), plain(settings)), env={})
    assert again == settings


@budget(0.5)
@given(st.text(max_size=300) | st.sampled_from((
    "bus: [unclosed\n", "a: b: c\n", "\tsite: x\n", "site: *nowhere\n", "? [a]\n: 1\n",
    "!!python/object/apply:os.system [true]\n", "site: !!binary aGVsbG8=\n", "- 1\n")))
def test_any_config_text_is_loaded_or_refused_with_one_line(tmp_path_factory: Any,
                                                            text: str) -> None:
    path = tmp_path_factory.mktemp("text") / "rocewatch.yaml"
    path.write_text(text, errors="surrogatepass")
    try:
        load_settings(path, env={})
    except ConfigError as exc:
        one_line(exc)


env_names = st.lists(st.sampled_from(("API", "PORT", "STORE", "KIND", "BUS", "KAFKA",
                                       "COLLECTORS", "0", "3", "NAME", "X", "", "REMEDIATION",
                                       "RECEIVERS", "GUARDS", "COOLDOWN", "INGEST",
                                       "MAX_AHEAD_S")), min_size=1, max_size=4)


@budget(0.5)
@given(st.dictionaries(env_names.map(lambda parts: "ROCEWATCH_" + "__".join(parts)),
                       st.text(max_size=20) | yaml_values.map(yaml.safe_dump),
                       max_size=4))
def test_any_environment_is_applied_or_refused_with_one_line(env: dict[str, str]) -> None:
    try:
        settings = load_settings(None, env=env)
    except ConfigError as exc:
        one_line(exc)
        return
    assert isinstance(settings, Settings)


@budget(0.5)
@given(mutated(TARGETS))
def test_a_mutated_targets_file_is_read_or_refused_with_our_error(doc: Any) -> None:
    try:
        inventory = parse_inventory(doc if isinstance(doc, dict) else {"targets": doc})
    except ConfigError as exc:
        one_line(exc)
        return
    assert len({t.name for t in inventory.targets}) == len(inventory.targets)
