"""The fabric at scale as SVG: one tile per switch, grouped the way the fabric is built.

* :func:`overview`: the aggregation tier as a band on top, then one panel per AI zone (worst
  first) holding its spines in a row and its leaves in a grid. A tile takes its switch's
  rolled-up level (:mod:`ui.query.health`), so 928 switches are 928 small squares and the red ones
  stand out; each panel names its worst entity under it. To stay small at thousands of switches,
  a group's healthy tiles are one ``<path>`` (one square per switch, one hover text for them
  all); a switch that is not ok or has something in maintenance is its own tile.
* :func:`group_detail`: one group's switches as named tiles (with the aggregation tier above a
  zone's spines), for the switch a person drills into.
* Over either, an incident's pause tree (:class:`~ui.query.views.PauseTree`): its hops between
  the tiles of their two ends, the root ringed. A hop to a host ends at its leaf, parallel links
  between two switches are one stroke, and the hops from one tier of a group to another (a
  zone's spines to the aggregation tier) are one bundle: a single hop is a ``<line>`` with an
  arrow towards the paused side, several are one ``<path>`` saying how many. So the picture's
  size grows with the switches, never with hosts, ports or links.

Every tile carries ``data-entity`` / ``data-level`` and a ``<title>`` saying why it is coloured;
a group's path of healthy tiles carries ``data-group`` and ``data-switches``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ui.dashboard.style import COLOURS, svg_text
from ui.query.views import GroupHealth, PauseTree, SwitchHealth

WIDTH = 1000.0
_DRAINED = "#6b8fb3"
_PLURAL = {"leaf": "leaves", "agg": "aggs", "spine": "spines"}


@dataclass(frozen=True)
class Tile:
    x: float
    y: float
    size: float
    #: the tier of a group it belongs to, as the tree's bundles name it: ("z3", "spine")
    tier: tuple[str, str] = ("", "")


@dataclass
class Canvas:
    parts: list[str]
    labels: list[str]
    tiles: dict[str, Tile]
    #: healthy tiles drawn as one path per group: group -> (squares, how many)
    healthy: dict[str, tuple[list[str], int]] = field(default_factory=dict)

    def text(self, x: float, y: float, text: str, size: float = 12, anchor: str = "start",
             weight: str = "normal", fill: str = "#1a1a1a", top: bool = False) -> None:
        (self.labels if top else self.parts).append(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:.1f}" text-anchor="{anchor}" '
            f'font-family="sans-serif" font-weight="{weight}" fill="{fill}">'
            f'{svg_text(text)}</text>')

    def tile(self, sw: SwitchHealth, x: float, y: float, size: float, named: bool) -> None:
        self.tiles[sw.name] = Tile(x, y, size, (sw.group, sw.role))
        if not named and sw.level == "ok" and not sw.drained:
            squares, n = self.healthy.get(sw.group, ([], 0))
            squares.append(f"M{x:.1f} {y:.1f}h{size:.1f}v{size:.1f}h-{size:.1f}z")
            self.healthy[sw.group] = (squares, n + 1)
            return
        why = "ok" if sw.worst is None else (
            f"{sw.worst.level}: {sw.worst.alert} on {sw.worst.entity} — {sw.worst.summary}")
        extra = f"; {sw.problems} not ok" if sw.problems > 1 else ""
        held = f"; {sw.drained} in maintenance" if sw.drained else ""
        util = f"; busiest port {sw.util:.0%}" if sw.util is not None else ""
        stroke = _DRAINED if sw.drained and sw.level == "ok" else "#4d4d4d"
        dash = ' stroke-dasharray="3 2"' if sw.drained else ""
        body = (f'<g data-entity="{svg_text(sw.name)}" data-level="{sw.level}">'
                f'<title>{svg_text(f"{sw.name} ({sw.role}): {why}{extra}{held}{util}")}</title>'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{size:.1f}" height="{size:.1f}" '
                f'rx="{max(1.5, size / 6):.1f}" fill="{COLOURS[sw.level]}" stroke="{stroke}" '
                f'stroke-width="{0.6 if size < 16 else 1}"{dash}/>')
        if named:
            fg = "#1a1a1a" if sw.level in ("ok", "warning", "nodata") else "#ffffff"
            short = sw.name.split("-")[-1]
            body += (f'<text x="{x + size / 2:.1f}" y="{y + size / 2 + 3.5:.1f}" '
                     f'font-size="{min(11.0, size / 4.2):.1f}" text-anchor="middle" '
                     f'font-family="monospace" fill="{fg}">{svg_text(short)}</text>')
        self.parts.append(body + "</g>")

    def flush_healthy(self) -> None:
        """Each group's healthy tiles as one path (drawn under the tiles that are not ok)."""
        for group, (squares, n) in self.healthy.items():
            self.parts.append(
                f'<path class="rw-healthy" data-group="{svg_text(group)}" data-level="ok" '
                f'data-switches="{n}" fill="{COLOURS["ok"]}" stroke="#4d4d4d" '
                f'stroke-width="0.6" d="{"".join(squares)}"><title>'
                f'{svg_text(f"{group}: {n} switches ok (pick the group for their names)")}'
                f'</title></path>')
        self.healthy = {}

    def svg(self, height: float, mode: str) -> str:
        self.flush_healthy()
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="rw-fabric rw-hierarchy" '
                f'data-mode="{mode}" viewBox="0 0 {WIDTH:.0f} {height:.0f}" width="100%" '
                f'style="background:#fafafa;border-radius:8px">' + _MARKERS
                + "".join(self.parts) + "".join(self.labels) + "</svg>")


_MARKERS = "<defs>" + "".join(
    f'<marker id="rw-arrow-{level}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" '
    f'markerHeight="5" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
    f'fill="{colour}"/></marker>' for level, colour in COLOURS.items()) + "</defs>"


#: the largest tile (a small fabric's few switches are not drawn as posters)
MAX_TILE = 34.0


def _grid(c: Canvas, switches: Sequence[SwitchHealth], x0: float, y0: float, width: float,
          per_row: int, gap: float, named: bool, max_tile: float = MAX_TILE) -> float:
    """Tiles in rows of ``per_row`` across ``width`` (at most ``max_tile`` wide); returns the y
    below them."""
    if not switches:
        return y0
    size = min(max_tile, (width - gap * (per_row - 1)) / per_row)
    for i, sw in enumerate(switches):
        r, col = divmod(i, per_row)
        c.tile(sw, x0 + col * (size + gap), y0 + r * (size + gap), size, named)
    rows = -(-len(switches) // per_row)
    return y0 + rows * (size + gap)


def _by_role(switches: Sequence[SwitchHealth], group: str) -> dict[str, list[SwitchHealth]]:
    out: dict[str, list[SwitchHealth]] = {"agg": [], "spine": [], "leaf": []}
    for sw in switches:
        if sw.group == group:
            out.setdefault(sw.role, []).append(sw)
    return out


def overview(groups: Sequence[GroupHealth], switches: Sequence[SwitchHealth],
             tree: PauseTree | None = None, selected: str = "") -> str:
    """Every switch of the fabric: the aggregation band, then the zones worst first."""
    c = Canvas([], [], {})
    y = 8.0
    aggs = [sw for sw in switches if sw.role == "agg"]
    if aggs:
        agg = next((g for g in groups if g.kind == "aggregation"), None)
        c.text(10, y + 13, _title("aggregation", agg), 14, weight="bold")
        y = _grid(c, aggs, 10, y + 20, WIDTH - 20, min(48, max(16, len(aggs))), 3, False,
                  max_tile=22) + 14
    panels = [g for g in groups if g.kind != "aggregation"]
    cols = 1 if len(panels) == 1 else (2 if len(panels) <= 4 else 4)
    gap = 12.0
    pw = (WIDTH - 20 - gap * (cols - 1)) / cols
    per_row = 16 if cols > 1 else 32
    row_top = row_bottom = y
    for i, g in enumerate(panels):
        col = i % cols
        if col == 0 and i:
            row_top = row_bottom + gap
        x0 = 10 + col * (pw + gap)
        members = _by_role(switches, g.id)
        c.text(x0 + 6, row_top + 16, _title(g.id, g), 13, weight="bold",
               fill=COLOURS[g.level] if g.level in ("critical", "warning") else "#1a1a1a")
        yy = _grid(c, members["spine"], x0 + 6, row_top + 24, pw - 12, per_row, 2, False)
        yy = _grid(c, members["leaf"], x0 + 6, yy + 6, pw - 12, per_row, 2, False)
        if g.worst:
            w = g.worst[0]
            c.text(x0 + 6, yy + 13, f"{w.alert} on {w.entity}", 11,
                   fill=COLOURS.get(w.level, "#4d4d4d"))
            yy += 16
        bottom = yy + 6
        chosen = g.id == selected
        c.parts.insert(0, f'<rect x="{x0:.1f}" y="{row_top:.1f}" width="{pw:.1f}" '
                          f'height="{bottom - row_top:.1f}" rx="6" fill="#ffffff" '
                          f'stroke="{"#1a1a1a" if chosen else "#d0d0d0"}" '
                          f'stroke-width="{2 if chosen else 1}" data-group="{svg_text(g.id)}" '
                          f'data-level="{g.level}"/>')
        row_bottom = max(row_bottom, bottom)
    y = row_bottom + 4
    height = y + 4
    if tree is not None:
        _tree(c, tree)
    return c.svg(height, "overview")


def _title(name: str, g: GroupHealth | None) -> str:
    if g is None:
        return name
    roles = ", ".join(f"{n} {_PLURAL.get(r, r + 's') if n > 1 else r}"
                      for r, n in g.roles.items())
    bad = f" · {g.problems} not ok" if g.problems else " · ok"
    held = f" · {g.drained} drained" if g.drained else ""
    return f"{name} ({roles}){bad}{held}"


def group_detail(group: GroupHealth, switches: Sequence[SwitchHealth],
                 aggs: Sequence[SwitchHealth] = (), tree: PauseTree | None = None) -> str:
    """One group's switches as named tiles; a zone shows the aggregation tier above it."""
    c = Canvas([], [], {})
    y = 10.0
    members = _by_role(switches, group.id)
    rows = [("aggregation", list(aggs) or members["agg"]), ("spines", members["spine"]),
            ("leaves", members["leaf"])]
    for title, found in rows:
        if not found:
            continue
        c.text(10, y + 14, f"{title} ({len(found)})", 14, weight="bold")
        per_row = min(16, max(8, len(found)))
        y = _grid(c, found, 10, y + 22, WIDTH - 20, per_row, 6, True, max_tile=80) + 12
    if tree is not None:
        _tree(c, tree)
    return c.svg(y + 4, "group")


def _centre(t: Tile) -> tuple[float, float]:
    return t.x + t.size / 2, t.y + t.size / 2


def tier_name(group: str, role: str) -> str:
    """How a tier of a group is named: "z3 spines", "aggregation", "z3 hosts"."""
    return "aggregation" if role == "agg" else f"{group} {_PLURAL.get(role, role + 's')}"


def _tier_name(tier: tuple[str, str]) -> str:
    return tier_name(*tier)


def _tree(c: Canvas, tree: PauseTree) -> None:
    """The tree's hops between the tiles drawn (a hop to a host ends at its leaf), bundled by
    the tiers they join."""
    # a node without a tile (a host) is drawn at the tile it hangs off
    leaf_of: dict[str, str] = {}
    for e in tree.edges:
        if (e.upstream in c.tiles) != (e.downstream in c.tiles):
            drawn, hidden = (e.upstream, e.downstream) if e.upstream in c.tiles else \
                (e.downstream, e.upstream)
            leaf_of[hidden] = drawn
    # (downstream tier, upstream tier, level) -> the hops, and the tile pairs they join
    bundles: dict[tuple[tuple[str, str], tuple[str, str], str],
                  tuple[list[str], dict[tuple[str, str], tuple[Tile, Tile]]]] = {}
    for e in tree.edges:
        down = e.downstream if e.downstream in c.tiles else leaf_of.get(e.downstream, "")
        up = e.upstream if e.upstream in c.tiles else leaf_of.get(e.upstream, "")
        a, b = c.tiles.get(down), c.tiles.get(up)
        if a is None or b is None or a is b:
            continue
        links, pairs = bundles.setdefault((a.tier, b.tier, e.level), ([], {}))
        links.append(e.link)
        pairs[(down, up)] = (a, b)
    for (down_tier, up_tier, level), (links, pairs) in bundles.items():
        colour = COLOURS[level]
        if len(links) == 1:
            [(down, up)] = pairs
            [(a, b)] = pairs.values()
            (x1, y1), (x2, y2) = _centre(a), _centre(b)
            c.labels.append(
                f'<line class="rw-tree" data-entity="{svg_text(links[0])}" '
                f'data-level="{level}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                f'stroke="{colour}" stroke-width="2.5" stroke-opacity="0.9" '
                f'marker-end="url(#rw-arrow-{level})">'
                f'<title>{svg_text(f"{links[0]}: {down} pauses {up}")}</title></line>')
            continue
        d = "".join(f"M{_centre(a)[0]:.1f} {_centre(a)[1]:.1f}L{_centre(b)[0]:.1f} "
                    f"{_centre(b)[1]:.1f}" for a, b in pairs.values())
        what = f"{_tier_name(down_tier)} → {_tier_name(up_tier)}"
        shown = ", ".join(links[:6]) + (f" and {len(links) - 6} more" if len(links) > 6 else "")
        why = (f"{len(links)} hops: {_tier_name(down_tier)} pause {_tier_name(up_tier)} "
               f"({shown})")
        c.labels.append(
            f'<path class="rw-tree" data-entity="{svg_text(what)}" data-level="{level}" '
            f'data-hops="{len(links)}" fill="none" stroke="{colour}" stroke-width="1.5" '
            f'stroke-opacity="0.7" d="{d}"><title>{svg_text(why)}</title></path>')
    root = c.tiles.get(tree.root) or c.tiles.get(leaf_of.get(tree.root, ""))
    if root is not None:
        x, y = _centre(root)
        c.labels.append(f'<circle class="rw-tree-root" cx="{x:.1f}" cy="{y:.1f}" '
                        f'r="{root.size * 0.9 + 3:.1f}" fill="none" stroke="#1a1a1a" '
                        f'stroke-width="2"/>')
        c.text(x + root.size + 4, y + 4, f"root: {tree.entity}", 12, weight="bold",
               fill=COLOURS["critical"], top=True)
