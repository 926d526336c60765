"""Strict YAML configuration: loading, environment overrides, and the core's own sections.

One YAML file configures a deployment. Unknown keys are errors that name their key path
(``store.clickhouse.prot: unknown key``). Any value can be overridden from the environment with
``ROCEWATCH_`` followed by the key path in capitals joined by ``__`` (list items by index):
``ROCEWATCH_STORE__CLICKHOUSE__PASSWORD=...`` or ``ROCEWATCH_BUS__KIND=kafka``. Secrets belong
there, never in the file. Stage sections (collectors, detectors, remediation) are declared by the
stages; :mod:`rocewatch.settings` composes the whole model.

Durations and instants in the file are written in the one grammar of :mod:`pipeline.times`
(``docs/time.md``): a :data:`Duration` field takes ``90s``, ``1h30m``, ``250ms`` or a bare number of
seconds and holds float seconds; an :data:`Instant` field takes RFC 3339 with a zone,
``@<Unix seconds>`` or ns and holds ns (the file has no clock: ``now-...`` is refused there).
Fields named ``*_ms`` are Kafka's own integer milliseconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, ValidationError
from pydantic_core import PydanticCustomError

from pipeline.errors import ConfigError, QueryError
from pipeline.times import duration_seconds, parse_instant

ENV_PREFIX = "ROCEWATCH_"

M = TypeVar("M", bound=BaseModel)


def _duration(value: object) -> float:
    try:
        return duration_seconds(value)
    except QueryError as exc:
        raise PydanticCustomError("duration", "{reason}", {"reason": str(exc)}) from None


def _instant(value: object) -> int:
    try:
        return parse_instant(value, None)
    except QueryError as exc:
        raise PydanticCustomError("instant", "{reason}", {"reason": str(exc)}) from None


#: a duration in the config file (``90s``, ``1h30m``, ``250ms``, or bare seconds), held as seconds
Duration = Annotated[float, BeforeValidator(_duration)]
#: an instant in the config file (RFC 3339 with a zone, ``@<Unix seconds>``, ns), held as ns
Instant = Annotated[int, BeforeValidator(_instant)]


class Strict(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginSpec(BaseModel):
    """One plugin instance: ``type`` picks the plugin, ``name`` names the instance, and every
    other key is an option checked by the plugin's own ``Options`` model."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str
    name: str = ""

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def instance(self) -> str:
        return self.name or self.type


class KafkaSettings(Strict):
    bootstrap: str = "127.0.0.1:9092"
    partitions: int = Field(6, ge=1)
    replication: int = Field(1, ge=1)
    compression: Literal["none", "gzip", "lz4", "zstd"] = "lz4"
    linger_ms: int = Field(20, ge=0)
    batch_bytes: int = Field(1 << 20, ge=1024)
    group_prefix: str = "rocewatch-"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_username: str = ""
    sasl_password: SecretStr = SecretStr("")
    client_id: str = "rocewatch"
    #: the largest message a producer sends (keep it within the broker's message.max.bytes)
    max_message_bytes: int = Field(1_000_000, ge=1024)
    #: how much a consumer fetches per partition and per request
    max_partition_fetch_bytes: int = Field(8 << 20, ge=1024)
    fetch_max_bytes: int = Field(64 << 20, ge=1024)
    #: a consumer that stops heart-beating this long leaves the group (its partitions move)
    session_timeout_ms: int = Field(10_000, ge=1000)
    heartbeat_interval_ms: int = Field(1_000, ge=100)
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    #: how long a client waits for the first broker before it gives up
    bootstrap_timeout_ms: int = Field(30_000, ge=100)
    #: the longest wait between attempts to reach a broker that is down: also how long a client
    #: may stay away after the broker is back (kafka-python's default, 30 s, held a producer
    #: 20-30 s past a restarted broker's return)
    reconnect_backoff_max_ms: int = Field(1_000, ge=50)
    request_timeout_ms: int = Field(30_000, ge=100)
    #: how long a consumer waits for a commit; a commit that fails is harmless (the work is
    #: redone, and the next commit covers it), a commit that blocks holds the consumer up
    commit_timeout_ms: int = Field(5_000, ge=100)
    #: verify record-batch CRCs on fetch (slow in pure Python without the crc32c package)
    check_crcs: bool = True
    #: how often a consumer re-reads the topics' metadata: a partition its group's assignment
    #: did not know of (a topic still spreading over the cluster's brokers, or one an operator
    #: gave more partitions) is read within this of appearing (kafka-python's default, 5 min,
    #: left such a partition unread that long)
    metadata_max_age_ms: int = Field(10_000, ge=1000)
    #: a consumer's poll that has not returned this long past its own timeout is given up, and
    #: the consumer replaced by a new member of its group (a kafka-python 3.0.12 poll was seen
    #: blocked for good: the role would have stalled without a word)
    poll_deadline_ms: int = Field(30_000, ge=100)


class BusSettings(Strict):
    kind: Literal["memory", "kafka"] = "memory"
    topic_prefix: str = "rocewatch."
    partitions: int = Field(4, ge=1)
    capacity: int = Field(20_000, ge=10)
    kafka: KafkaSettings = KafkaSettings()


class ClickHouseSettings(Strict):
    host: str = "127.0.0.1"
    port: int = Field(9000, ge=1, le=65535)
    user: str = "default"
    password: SecretStr = SecretStr("")
    secure: bool = False
    #: a cluster name from the servers' remote_servers: tables become Replicated*MergeTree
    #: shards created ON CLUSTER, read and written through Distributed tables
    cluster: str = ""
    #: more servers tried in turn when ``host`` does not answer (``host:port`` each): on a
    #: cluster, the other replicas, as any server of it runs every query
    alt_hosts: tuple[Annotated[str, Field(pattern=r"^[^\s:,]+:\d{1,5}$")], ...] = ()
    #: wire compression; on loopback or a fast LAN "none" costs the least CPU
    compression: Literal["none", "lz4", "zstd"] = "none"
    #: on servers older than 20.5, store identifiers as LowCardinality(String) under the
    #: experimental setting (else as plain String)
    legacy_low_cardinality: bool = True
    connect_timeout_s: Duration = Field(10.0, gt=0)
    send_receive_timeout_s: Duration = Field(300.0, gt=0)


class StoreSettings(Strict):
    kind: Literal["chdb", "clickhouse"] = "chdb"
    database: str = Field("rocewatch", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    chdb_path: str = "var/chdb"
    #: days of raw samples, alerts and actions kept
    retention_days: int = Field(14, ge=1)
    #: days of the 1-minute and 1-hour rollups kept
    rollup_1m_days: int = Field(90, ge=1)
    rollup_1h_days: int = Field(730, ge=1)
    #: how often the retention job drops expired partitions (servers without TTL)
    retention_check_s: Duration = Field(3600.0, gt=0)
    #: keep the 1-minute and 1-hour rollups, rolled in bulk by a scheduled job in the ingest
    #: role (pipeline/store/rollup/job.py); off, long ranges read the raw samples
    rollups: bool = True
    #: a bucket is rolled once the data's event time is this far past its end
    rollup_lateness_s: Duration = Field(30.0, ge=0)
    #: how often (wall clock) the rollup job looks for complete buckets and late samples
    rollup_every_s: Duration = Field(2.0, gt=0)
    #: late samples re-roll their buckets while at most this far (event time) behind the
    #: newest data; later ones stay in the raw samples only
    rollup_max_late_s: Duration = Field(86400.0, gt=0)
    clickhouse: ClickHouseSettings = ClickHouseSettings()


class IngestSettings(Strict):
    """What the ingest role stores (:mod:`pipeline.ingest.window`): samples whose time is more
    than ``max_past_s`` before or ``max_ahead_s`` after the ingest clock (the wall clock, or the
    fabric's time when it runs ahead) go to the dead-letter topic with the reason."""

    #: the oldest sample accepted, before the ingest clock (never more than the store keeps)
    max_past_s: Duration = Field(86400.0, gt=0)
    #: the newest sample accepted, after the ingest clock
    max_ahead_s: Duration = Field(300.0, gt=0)
    #: how long one insert's batch is gathered from the bus (at most; it is also cut at
    #: 200,000 rows): longer is fewer, larger parts for the store to merge, at the price of
    #: that much more store lag
    gather_s: Duration = Field(0.5, gt=0, le=30)


class CoordinationSettings(Strict):
    """ZooKeeper, through which the processes of one role share work (:mod:`pipeline.cluster`):
    the leader that runs the ingest role's store jobs, the collectors' targets. Empty
    ``zookeeper``: no coordination (every ingest process runs the jobs, ``shard: i/n`` is
    static)."""

    #: ``host:port,...`` of the ZooKeeper ensemble ("" = none)
    zookeeper: str = ""
    #: the znode under which this deployment's groups live (one per deployment)
    root: str = Field("/rocewatch", pattern=r"^(/[A-Za-z0-9_.-]+)+$")
    #: how long a process that vanished keeps its share (ZooKeeper's session timeout; the
    #: ensemble bounds it, 2-20 s by default)
    session_timeout_s: Duration = Field(6.0, ge=1)


class ApiSettings(Strict):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    max_points: int = Field(20_000, ge=100)
    #: the token rocewatch's own clients of the API send (``rocewatch query``, the dashboard's
    #: launcher): set it with ROCEWATCH_API__TOKEN, never in the file (who may use the API, and
    #: with which role, is the ``access`` section: ui/api/access.py)
    token: SecretStr = SecretStr("")


class MetricsSettings(Strict):
    """The process's Prometheus endpoint (:mod:`pipeline.exposition`)."""

    #: ``host:port`` of ``/metrics`` for every role of this process ("" = none; a process that
    #: runs the api role also serves ``/metrics`` on the API's port)
    listen: str = Field("", pattern=r"^(.+:\d{1,5})?$")


class DashboardSettings(Strict):
    host: str = "127.0.0.1"
    port: int = Field(8501, ge=0, le=65535)
    api_url: str = ""
    refresh_s: Duration = Field(2.0, gt=0)


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``, nested mappings key by key (defaults under values)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; an error is one line naming the file, line and column."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping at the top, not {type(data).__name__}")
    return data


def yaml_error(path: str | Path, exc: yaml.YAMLError) -> str:
    """A YAML syntax error as one line: ``file:line:column: not valid YAML: problem (context at
    line:column)``."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    text = getattr(exc, "problem", None) or str(exc)
    context, since = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context:
        at = f" at {since.line + 1}:{since.column + 1}" if since is not None else ""
        text = f"{text} ({context}{at})"
    return f"{where}: not valid YAML: {' '.join(str(text).split())}"


def apply_env(data: dict[str, Any], env: Mapping[str, str] | None = None,
              origins: dict[str, str] | None = None) -> dict[str, Any]:
    """Overlay ``ROCEWATCH_A__B__C=value`` variables onto the config mapping (values as YAML).
    ``origins`` (when given) gets each key path set from the environment → its variable, so a
    validation error can say where a bad value came from (:func:`validate`)."""
    env = os.environ if env is None else env
    for var, raw in sorted(env.items()):
        if not var.startswith(ENV_PREFIX) or "__" not in var:
            continue
        keys = [k.lower() for k in var[len(ENV_PREFIX):].split("__")]
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            value = raw
        if isinstance(value, (dict, list)) or value is None:
            value = raw
        node: Any = data
        path: tuple[int | str, ...] = ()
        for depth, key in enumerate(keys):
            last = depth == len(keys) - 1
            if isinstance(node, list):
                if not key.isdigit() or int(key) >= len(node):
                    raise ConfigError(f"no list item {key} (from the environment: {var})",
                                      key_path((*path, key)))
                path = (*path, int(key))
                if last:
                    node[int(key)] = value
                else:
                    node = node[int(key)]
            elif last:
                path = (*path, key)
                node[key] = value
            else:
                path = (*path, key)
                node = node.setdefault(key, {})
                if not isinstance(node, (dict, list)):
                    raise ConfigError(f"is a value, not a section (from the environment: {var})",
                                      key_path(path))
        if origins is not None:
            origins[key_path(path)] = var
    return data


def key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate(model: type[M], data: Mapping[str, Any], where: str = "",
             origins: Mapping[str, str] | None = None) -> M:
    """Build ``model`` from ``data``; the first error becomes a ConfigError naming its key path
    (and, for a value set from the environment, its variable: ``origins`` of :func:`apply_env`)."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        problems: list[str] = []
        paths: list[str] = []
        for err in exc.errors():
            path = key_path(tuple(err["loc"]))
            if where:
                path = f"{where}.{path}" if path else where
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            var = _origin(path, origins or {})
            if var:
                msg = f"{msg} (from the environment: {var})"
            paths.append(path)
            problems.append(f"{path}: {msg}" if path else msg)
        error = ConfigError("; ".join(problems))
        error.path = paths[0] if paths else where
        raise error from None


def _origin(path: str, origins: Mapping[str, str]) -> str:
    """The environment variable that set ``path``, or one under it (``api.port`` is wrong
    because ``ROCEWATCH_API__PORT__X`` made it a section)."""
    if not path:
        return ""
    if path in origins:
        return origins[path]
    for key, var in origins.items():
        if key.startswith(path) and key[len(path):len(path) + 1] in (".", "["):
            return var
    return ""
