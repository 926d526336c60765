"""The files and directories a configuration names, and the check that each one is there.

A config field whose value names a file is typed :data:`ConfigFile` (a directory:
:data:`ConfigDir`), in the core's sections, the stages' sections and the plugins' options alike.
``rocewatch check-config`` walks the validated model (:func:`named_paths`) and checks every one
(:func:`check_paths`); ``rocewatch run`` runs the same check before it starts anything, so a
missing targets, topology, TLS or token file is the same one-line error in both, naming its key
path. A relative path is read from the working directory (the message says which).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, get_args

from pydantic import BaseModel

from pipeline.errors import ConfigError


@dataclass(frozen=True)
class NamesPath:
    """Marks a config field whose value names a file or a directory that must exist when it is
    set: ``rocewatch check-config`` (and ``rocewatch run`` before it starts anything) checks
    every one (:func:`named_paths`, :func:`check_paths`)."""

    what: str = "file"
    directory: bool = False


#: a config value naming a file that must exist when set (targets, topology, TLS, token files)
ConfigFile = Annotated[str, NamesPath("file")]
#: a config value naming a directory that must exist when set
ConfigDir = Annotated[str, NamesPath("directory", directory=True)]


def _marker(metadata: object) -> NamesPath | None:
    for item in metadata if isinstance(metadata, (list, tuple)) else ():
        if isinstance(item, NamesPath):
            return item
    return None


def named_paths(model: BaseModel, where: str = "") -> Iterator[tuple[str, str, NamesPath]]:
    """``(key path, value, marker)`` of every non-empty :data:`ConfigFile` / :data:`ConfigDir`
    value in ``model``, its sections, and the models in its tuples and mappings."""
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        path = f"{where}.{name}" if where else name
        marker = _marker(info.metadata)
        if marker is not None:
            if isinstance(value, str) and value:
                yield path, value, marker
        elif isinstance(value, BaseModel):
            yield from named_paths(value, path)
        elif isinstance(value, (tuple, list)):
            items = [_marker(getattr(arg, "__metadata__", ())) for arg in get_args(info.annotation)]
            item_marker = next((m for m in items if m is not None), None)
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from named_paths(item, f"{path}[{i}]")
                elif item_marker is not None and isinstance(item, str) and item:
                    yield f"{path}[{i}]", item, item_marker
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(item, BaseModel):
                    yield from named_paths(item, f"{path}.{key}")


def check_path(value: str, marker: NamesPath, where: str) -> None:
    """A ConfigError naming ``where`` unless ``value`` names a readable file (or directory)."""
    path = Path(value)
    seen_from = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
    if not path.exists():
        raise ConfigError(f"{marker.what} {value} does not exist{seen_from}", where)
    if marker.directory and not path.is_dir():
        raise ConfigError(f"{value} is not a directory", where)
    if not marker.directory and not path.is_file():
        raise ConfigError(f"{value} is not a file", where)
    if not os.access(path, os.R_OK | (os.X_OK if marker.directory else 0)):
        raise ConfigError(f"{marker.what} {value} cannot be read", where)


def check_paths(model: BaseModel, where: str = "") -> list[str]:
    """Check every file and directory ``model`` names (:func:`check_path`); returns them as
    ``key path value``."""
    checked = []
    for path, value, marker in named_paths(model, where):
        check_path(value, marker, path)
        checked.append(f"{path} {value}")
    return checked
