"""Strict configuration: unknown keys name their path, env overrides, plugin options."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import apply_env, read_yaml
from pipeline.errors import ConfigError
from rocewatch.settings import check, load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rocewatch.yaml"
    path.write_text(text)
    return path


def test_defaults_are_the_embedded_backends() -> None:
    settings = load_settings(None, env={})
    assert settings.bus.kind == "memory"
    assert settings.store.kind == "chdb"


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, "store:\n  clickhouse:\n    prot: 9000\n")
    with pytest.raises(ConfigError, match=r"store\.clickhouse\.prot: unknown key") as err:
        load_settings(path, env={})
    assert err.value.path == "store.clickhouse.prot"


def test_bad_value_names_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, "bus:\n  kind: rabbit\n")
    with pytest.raises(ConfigError, match=r"bus\.kind"):
        load_settings(path, env={})


def test_env_overrides_file_and_keeps_secrets_out(tmp_path: Path) -> None:
    path = write(tmp_path, "store:\n  kind: clickhouse\n  clickhouse:\n    port: 9000\n")
    env = {"ROCEWATCH_STORE__CLICKHOUSE__PORT": "19000",
           "ROCEWATCH_STORE__CLICKHOUSE__PASSWORD": "s3cret",
           "ROCEWATCH_CONFIG": "ignored: not a key path"}
    settings = load_settings(path, env=env)
    assert settings.store.clickhouse.port == 19000
    assert settings.store.clickhouse.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


def test_env_override_of_unknown_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        load_settings(None, env={"ROCEWATCH_STORE__NOPE": "1"})


def test_env_list_items_by_index() -> None:
    data = {"collectors": [{"type": "gnmi", "name": "a"}]}
    apply_env(data, {"ROCEWATCH_COLLECTORS__0__NAME": "fabric"})
    assert data["collectors"][0]["name"] == "fabric"
    with pytest.raises(ConfigError, match="no list item"):
        apply_env(data, {"ROCEWATCH_COLLECTORS__3__NAME": "x"})


def test_yaml_errors_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_yaml(write(tmp_path, "bus: [unclosed\n"))
    with pytest.raises(ConfigError, match="mapping at the top"):
        read_yaml(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        read_yaml(tmp_path / "missing.yaml")


def test_unknown_plugin_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "collectors:\n  - {type: netconf, name: x}\n")
    with pytest.raises(Exception, match="netconf"):
        check(load_settings(path, env={}))


def test_embedded_store_keeps_ingest_and_api_together() -> None:
    settings = load_settings(None, env={}, overrides={"remediation": {"receivers": []}})
    with pytest.raises(ConfigError, match="one process"):
        check(settings, ("ingest",))
    check(settings, ("ingest", "api"))


# --- durations and instants (the grammar of pipeline.times) ---

def test_durations_in_the_file_and_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, "remediation:\n  guards:\n    cooldown: 1h30m\n    confirm: 45\n"
                           "  clock:\n    tick: 250ms\nstore:\n  retention_check_s: 2h\n"
                           "detection:\n  update_every_s: 0.5\n"
                           "  symptom_update_every_s: 2m\ningest:\n  gather_s: 1500ms\n")
    settings = load_settings(path, env={"ROCEWATCH_REMEDIATION__GUARDS__TARGET_COOLDOWN": "2d"})
    guards = settings.remediation.guards
    assert (guards.cooldown, guards.confirm, guards.target_cooldown) == (5400.0, 45.0, 172800.0)
    assert settings.remediation.clock.tick == 0.25
    assert settings.store.retention_check_s == 7200.0
    assert settings.detection.update_every_s == 0.5
    assert settings.detection.symptom_update_every_s == 120.0
    assert settings.ingest.gather_s == 1.5


@pytest.mark.parametrize(("text", "says"), [
    ("30m1h", "want a duration like 90s, 1h30m"), ("-5s", "want a duration"),
    ("1e40", "want a duration"), ("99999999999", "longest duration accepted, 36500d"),
    (".nan", "want a duration"), ("true", "want a duration"),
])
def test_bad_durations_name_their_key(tmp_path: Path, text: str, says: str) -> None:
    path = write(tmp_path, f"remediation:\n  guards:\n    cooldown: {text}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path, env={})
    assert err.value.path == "remediation.guards.cooldown"
    assert str(err.value).startswith("remediation.guards.cooldown: ") and says in str(err.value)
    assert "\n" not in str(err.value)


SILENCE = ("remediation:\n  silences:\n    - matchers: ['alertname=faulty_link']\n"
           "      starts_at: {start}\n      ends_at: 2026-12-01T04:00:00Z\n")


@pytest.mark.parametrize("start", ["2026-12-01T02:00:00Z", "'2026-12-01T03:00:00+01:00'",
                                   "'@1796090400'", "1796090400000000000"])
def test_silence_times_are_instants_in_ns(tmp_path: Path, start: str) -> None:
    settings = load_settings(write(tmp_path, SILENCE.format(start=start)), env={})
    silence = settings.remediation.silences[0]
    assert (silence.starts_at, silence.ends_at) == (1796090400 * 10**9, 1796097600 * 10**9)


@pytest.mark.parametrize(("start", "says"), [
    ("2026-12-01 02:00:00", "no time zone"), ("2026-12-01", "a date, not an instant"),
    ("now-1h", "relative to the fabric's clock"), ("1796090400", "@1796090400"),
    ("2026-12-01T05:00:00Z", "ends_at must be after starts_at"),
])
def test_bad_silence_times_say_why(tmp_path: Path, start: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"remediation\.silences") as err:
        load_settings(write(tmp_path, SILENCE.format(start=start)), env={})
    assert says in str(err.value)


# --- where a bad value came from (issue 11, "smaller") ---

def test_an_env_override_error_names_the_variable_and_the_full_key() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={"ROCEWATCH_API__PORT__X": "1"})
    assert err.value.path == "api.port"
    assert str(err.value).startswith("api.port: ")
    assert "from the environment: ROCEWATCH_API__PORT__X" in str(err.value)
    with pytest.raises(ConfigError, match=r"^api\.port: .*integer.*ROCEWATCH_API__PORT\)$"):
        load_settings(None, env={"ROCEWATCH_API__PORT": "eighty"})
    with pytest.raises(ConfigError, match=r"^store\.nope: unknown key \(from the environment: "
                                          r"ROCEWATCH_STORE__NOPE\)$"):
        load_settings(None, env={"ROCEWATCH_STORE__NOPE": "1"})


def test_an_env_override_under_a_value_of_the_file_names_the_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "api:\n  port: 8080\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path, env={"ROCEWATCH_API__PORT__X": "1"})
    assert err.value.path == "api.port"
    assert str(err.value) == ("api.port: is a value, not a section (from the environment: "
                              "ROCEWATCH_API__PORT__X)")
    # a value that came from the file says nothing about the environment
    with pytest.raises(ConfigError) as err:
        load_settings(write(tmp_path, "api:\n  port: eighty\n"), env={})
    assert "environment" not in str(err.value)


@pytest.mark.parametrize(("text", "line", "column"), [
    ("bus:\n  kind: memory\n  partitions: [4\n", 4, 1),
    ("api:\n  port: 8080\n  host: a: b\n", 3, 10),
    ("store:\n  kind: chdb\n\tdatabase: x\n", 3, 1),
    ("site: *nowhere\n", 1, 7),
])
def test_a_yaml_syntax_error_is_one_line_naming_file_line_and_column(
        tmp_path: Path, text: str, line: int, column: int) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(path, env={})
    message = str(err.value)
    assert message.startswith(f"{path}:{line}:{column}: not valid YAML: ")
    assert "\n" not in message


# --- every file the config names (issue 11.6) ---

TARGETS = """
targets:
  - name: leaf1
    address: 127.0.0.1:9339
    protocol: gnmi
    profile: openconfig
    tls: {ca: ca.pem}
"""


def files_config(tmp_path: Path, **keys: str) -> Path:
    """A config naming a topology, a collector's targets file and remediation's targets file."""
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "targets.yaml").write_text(TARGETS)
    (tmp_path / "topology.json").write_text(
        '{"spines": ["spine1"], "leaves": ["leaf1"], "hosts": [], "links": []}')
    values = {"topology": str(tmp_path / "topology.json"),
              "targets": str(tmp_path / "targets.yaml"),
              "profile_dir": str(tmp_path), "gnmi_targets": str(tmp_path / "targets.yaml"),
              **keys}
    return write(tmp_path, f"""
topology: {values['topology']}
collectors:
  - type: gnmi
    name: fabric
    targets: {values['targets']}
    profile_dirs: [{values['profile_dir']}]
remediation:
  receivers: []
  gnmi: {{targets_file: {values['gnmi_targets']}}}
""")


def test_a_config_whose_files_are_all_there_checks(tmp_path: Path) -> None:
    lines = check(load_settings(files_config(tmp_path), env={}))
    assert any(line.startswith("collectors[0].targets ") and line.endswith("reads")
               for line in lines)
    assert any(line.startswith("topology ") for line in lines)
    assert any(line.startswith("collectors[0].profile_dirs[0] ") for line in lines)


@pytest.mark.parametrize(("keys", "where", "says"), [
    ({"targets": "missing/targets.yaml"}, "collectors[0].targets",
     "file missing/targets.yaml does not exist (relative to "),
    ({"topology": "/nowhere/topology.json"}, "topology", "/nowhere/topology.json does not exist"),
    ({"profile_dir": "/nowhere"}, "collectors[0].profile_dirs[0]", "directory /nowhere"),
    ({"gnmi_targets": "/nowhere.yaml"}, "remediation.gnmi.targets_file", "does not exist"),
    ({"targets": "{tmp}"}, "collectors[0].targets", "is not a file"),
])
def test_a_missing_file_is_named_by_its_key(tmp_path: Path, keys: dict[str, str], where: str,
                                            says: str) -> None:
    keys = {k: v.format(tmp=tmp_path) for k, v in keys.items()}
    settings = load_settings(files_config(tmp_path, **keys), env={})
    with pytest.raises(ConfigError) as err:
        check(settings)
    assert err.value.path == where and says in str(err.value)
    assert "\n" not in str(err.value)


def test_files_the_config_names_must_also_read(tmp_path: Path) -> None:
    path = files_config(tmp_path)
    (tmp_path / "topology.json").write_text('{"spines": ')
    with pytest.raises(ConfigError, match=r"^topology: cannot read topology"):
        check(load_settings(path, env={}))
    files_config(tmp_path)
    (tmp_path / "ca.pem").unlink()  # named inside the targets file
    with pytest.raises(ConfigError, match=r"^collectors\[0\]\.targets: leaf1: tls\.ca "):
        check(load_settings(path, env={}))
    files_config(tmp_path)
    (tmp_path / "targets.yaml").write_text(TARGETS.replace("openconfig", "nokia"))
    with pytest.raises(ConfigError, match=r"^collectors\[0\]\.targets: .*no profile named 'nokia'"):
        check(load_settings(path, env={}))
    files_config(tmp_path)
    (tmp_path / "targets.yaml").write_text("targets: [unclosed\n")
    with pytest.raises(ConfigError, match=r"^collectors\[0\]\.targets: .*targets\.yaml:2:1: not "
                                          r"valid YAML"):
        check(load_settings(path, env={}))


def test_a_lab_agents_file_that_does_not_read_is_refused(tmp_path: Path) -> None:
    agents = tmp_path / "agents.json"
    agents.write_text('{"switches": [{"gnmi": {"address": "127.0.0.1:1"}}]}')  # no name
    path = write(tmp_path, f"collectors:\n  - {{type: snmp, agents: {agents}}}\n"
                           "remediation: {receivers: []}\n")
    with pytest.raises(ConfigError, match=r"^collectors\[0\]\.agents: cannot be read: KeyError"):
        check(load_settings(path, env={}))
