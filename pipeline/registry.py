"""The plugin registry: collectors, detectors and actions found through entry points.

Three entry-point groups, ``rocewatch.collectors``, ``rocewatch.detectors`` and
``rocewatch.actions``, are the only list of plugins: our built-ins are declared in our own
``pyproject.toml`` exactly as a third party's wheel would declare its own. A plugin is a class with
``name: ClassVar[str]`` and ``Options: ClassVar[type[BaseModel]]`` (unknown keys forbidden); it is
built from a :class:`~pipeline.config.PluginSpec` by :meth:`Registry.build`.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel

from pipeline.config import PluginSpec, validate
from pipeline.errors import ConfigError, PluginError

GROUPS = ("rocewatch.collectors", "rocewatch.detectors", "rocewatch.actions")


class Plugin(Protocol):
    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]]


P = TypeVar("P")


class Registry(Generic[P]):
    """Name → plugin class for one entry-point group."""

    def __init__(self, group: str) -> None:
        if group not in GROUPS:
            raise PluginError(f"unknown plugin group {group!r}; groups: {', '.join(GROUPS)}")
        self.group = group
        self._eps: dict[str, EntryPoint] = {ep.name: ep for ep in entry_points(group=group)}
        self._loaded: dict[str, type[P]] = {}

    def names(self) -> list[str]:
        return sorted(self._eps)

    def get(self, name: str) -> type[P]:
        if name in self._loaded:
            return self._loaded[name]
        ep = self._eps.get(name)
        if ep is None:
            raise PluginError(f"no {self.group} plugin named {name!r}; "
                              f"available: {', '.join(self.names()) or 'none'}")
        try:
            cls = ep.load()
        except ImportError as exc:
            raise PluginError(f"plugin {name!r} ({ep.value}) cannot be imported: {exc}") from exc
        if getattr(cls, "name", None) != name or not hasattr(cls, "Options"):
            raise PluginError(f"plugin {name!r} ({ep.value}) must declare name = {name!r} "
                              "and an Options model")
        self._loaded[name] = cls
        return cls  # type: ignore[no-any-return]

    def options(self, spec: PluginSpec, where: str) -> BaseModel:
        """Validate a spec's options against its plugin's Options model."""
        cls: Any = self.get(spec.type)
        options: BaseModel = validate(cls.Options, spec.options, where)
        return options

    def build(self, spec: PluginSpec, where: str, **context: Any) -> P:
        """Construct a plugin instance: ``cls(spec.instance, options, **context)``."""
        cls: Any = self.get(spec.type)
        opts = self.options(spec, where)
        try:
            return cls(spec.instance, opts, **context)  # type: ignore[no-any-return]
        except ConfigError:
            raise
        except TypeError as exc:
            raise PluginError(f"{where}: plugin {spec.type!r} cannot be built: {exc}") from exc
