"""The routing tree: which receivers get an alert, grouped by which labels, on which timings.

Alertmanager's semantics: an alert descends the tree from the root; at each level it goes to the
first child whose matchers accept it, and on to later siblings only while the matched child says
``continue``; when no child matches, the node itself takes it. Children inherit unset timings and
``group_by``. ``group_by: ['...']`` groups by every label (one group per alert).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.matchers import Matcher, match_all, parse_matchers
from remediation.settings import RouteSettings

ALL_LABELS = "..."
#: Alertmanager's defaults
DEFAULT_GROUP_BY: tuple[str, ...] = ("alertname", "entity")
DEFAULT_GROUP_WAIT_S = 30.0
DEFAULT_GROUP_INTERVAL_S = 300.0
DEFAULT_REPEAT_INTERVAL_S = 4 * 3600.0


@dataclass(frozen=True)
class Route:
    """A resolved node: inherited values filled in, receivers resolved."""

    key: str
    receivers: tuple[str, ...]
    matchers: tuple[Matcher, ...]
    group_by: tuple[str, ...]
    group_wait_s: float
    group_interval_s: float
    repeat_interval_s: float
    continue_: bool
    children: tuple[Route, ...]

    def match(self, labels: Mapping[str, str]) -> list[Route]:
        """The routes that take an alert with these labels (the root is assumed to match)."""
        out: list[Route] = []
        for child in self.children:
            if not match_all(child.matchers, labels):
                continue
            out.extend(child.match(labels))
            if not child.continue_:
                break
        return out or [self]

    def group_labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        if ALL_LABELS in self.group_by:
            return dict(labels)
        return {k: labels.get(k, "") for k in self.group_by}

    def group_key(self, labels: Mapping[str, str]) -> str:
        """Alertmanager's shape: ``{}/{matchers...}:{label="value",...}``."""
        group = self.group_labels(labels)
        inner = ",".join(f'{k}="{group[k]}"' for k in sorted(group))
        return f"{self.key}:{{{inner}}}"


def build_routes(settings: RouteSettings, all_receivers: Sequence[str]) -> Route:
    """Resolve the configured tree; the root's empty receiver list means every receiver."""
    return _build(settings, None, "{}", tuple(all_receivers))


def _build(node: RouteSettings, parent: Route | None, key: str,
           all_receivers: tuple[str, ...]) -> Route:
    receivers = node.receivers or (parent.receivers if parent else all_receivers)
    group_by = node.group_by if node.group_by is not None else (
        parent.group_by if parent else DEFAULT_GROUP_BY)

    def pick(value: float | None, inherited: float | None, default: float) -> float:
        if value is not None:
            return value
        return inherited if inherited is not None else default

    route = Route(
        key=key,
        receivers=receivers,
        matchers=parse_matchers(node.matchers),
        group_by=tuple(group_by),
        group_wait_s=pick(node.group_wait, parent.group_wait_s if parent else None,
                          DEFAULT_GROUP_WAIT_S),
        group_interval_s=pick(node.group_interval, parent.group_interval_s if parent else None,
                              DEFAULT_GROUP_INTERVAL_S),
        repeat_interval_s=pick(node.repeat_interval,
                               parent.repeat_interval_s if parent else None,
                               DEFAULT_REPEAT_INTERVAL_S),
        continue_=node.continue_,
        children=(),
    )
    children = tuple(
        _build(child, route, f"{key}/{{{','.join(child.matchers)}}}" + (f"#{i}" if i else ""),
               all_receivers)
        for i, child in enumerate(node.routes))
    return Route(**{**route.__dict__, "children": children})
