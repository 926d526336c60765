"""Strict checks for YAML-shaped values: each failure is a ConfigError naming the key path.

``scenario.py`` builds on these; a message reads ``traffic[1].load: must be <= 1, got 1.5``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.errors import ConfigError


def as_mapping(data: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"must be a mapping, not {type(data).__name__}", path or "(top level)")
    for k in data:
        if not isinstance(k, str):
            raise ConfigError(f"keys must be strings, not {k!r}", path or "(top level)")
    return data


def as_list(data: Any, path: str) -> list[Any]:
    if not isinstance(data, Sequence) or isinstance(data, str | bytes):
        raise ConfigError(f"must be a list, not {type(data).__name__}", path)
    return [*data]


def check_keys(m: Mapping[str, Any], path: str, *, required: set[str], optional: set[str]) -> None:
    for k in m:
        if k not in required and k not in optional:
            allowed = ", ".join(sorted(required | optional)) or "none"
            raise ConfigError(f"unknown field (allowed: {allowed})", join_path(path, k))
    for k in sorted(required):
        if k not in m:
            raise ConfigError("is required", join_path(path, k))


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def as_int(v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"must be an integer, not {v!r}", path)
    if lo is not None and v < lo:
        raise ConfigError(f"must be >= {lo}, got {v}", path)
    if hi is not None and v > hi:
        raise ConfigError(f"must be <= {hi}, got {v}", path)
    return v


def as_num(v: Any, path: str, lo: float | None = None, hi: float | None = None, *,
         lo_open: bool = False, hi_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ConfigError(f"must be a number, not {v!r}", path)
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ConfigError(f"must be {'>' if lo_open else '>='} {lo}, got {v}", path)
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ConfigError(f"must be {'<' if hi_open else '<='} {hi}, got {v}", path)
    return v
