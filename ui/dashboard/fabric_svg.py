"""The fabric picture as SVG: every switch, link and host coloured by its worst alert.

Two drawings, chosen by size:

* ``picture`` (up to :data:`PICTURE_MAX_LEAVES` leaves): spines on top, leaves below, hosts under
  their leaf; links are lines. Everything not ok is thick and coloured; red ones carry their name.
* ``tiles`` (larger fabrics): one tile per switch; a leaf's tile takes the worst level of the leaf,
  its uplinks and its hosts, so a 500-leaf fabric is a few hundred tiles, not ten thousand lines.
  Tiles that are not ok carry their name and what is wrong in their tooltip.

Every element carries ``data-entity`` and ``data-level`` and a ``<title>`` tooltip saying why. A
link drained or a host isolated on purpose (maintenance) is dashed, in the maintenance colour
unless something worse than information is on it, and says by whom and since when.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ui.dashboard.style import COLOURS, svg_text, worst
from ui.query.views import LEVELS, EntityStatus, TopologyView

PICTURE_MAX_LEAVES = 24
_OK_LINK = "#b9d7b0"
_DRAINED = "#6b8fb3"


@dataclass(frozen=True)
class Drawing:
    svg: str
    mode: str
    elements: int


def _title(entity: str, status: EntityStatus | None, drained: str = "") -> str:
    held = f" — {drained}" if drained else ""
    if status is None:
        return f"{entity}: ok{held}"
    return f"{entity}: {status.level}: {status.alert} — {status.summary}{held}"


def _level(entity: str, statuses: Mapping[str, EntityStatus]) -> str:
    status = statuses.get(entity)
    return status.level if status else "ok"


def _text(x: float, y: float, text: str, size: float = 12, anchor: str = "middle",
          weight: str = "normal", fill: str = "#1a1a1a") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:.1f}" text-anchor="{anchor}" '
            f'font-family="monospace" font-weight="{weight}" fill="{fill}">'
            f'{svg_text(text)}</text>')


def draw(topo: TopologyView, statuses: Mapping[str, EntityStatus],
         drained: Mapping[str, str] | None = None) -> Drawing:
    """``drained``: the targets in maintenance → what their maintenance says."""
    if len(topo.leaves) <= PICTURE_MAX_LEAVES:
        return _picture(topo, statuses, drained or {})
    return _tiles(topo, statuses)


def _picture(topo: TopologyView, statuses: Mapping[str, EntityStatus],
             drained: Mapping[str, str]) -> Drawing:
    leaves, spines = topo.leaves, topo.spines
    hosts_by_leaf: dict[str, list[str]] = {leaf: [] for leaf in leaves}
    for host in topo.hosts:
        hosts_by_leaf.setdefault(host["port"].split(":")[0], []).append(host["name"])
    width, height = 1000.0, 370.0
    y_spine, y_leaf, y_host = 40.0, 200.0, 300.0
    col = (width - 40) / max(1, len(leaves), len(spines))
    box_w, font = min(96.0, col - 8), max(9.0, min(14.0, col / 6.5))

    def xs(n: int) -> list[float]:
        step = (width - 40) / max(1, n)
        return [20 + step * (i + 0.5) for i in range(n)]

    x_spine = dict(zip(spines, xs(len(spines)), strict=True))
    x_leaf = dict(zip(leaves, xs(len(leaves)), strict=True))
    leaf_col = (width - 40) / max(1, len(leaves))
    parts: list[str] = []
    labels: list[str] = []
    # ok links at the bottom, the worst on top
    links = sorted(topo.links, key=lambda ln: -LEVELS.index(_level(ln["id"], statuses)))
    for link in links:
        a, b = link["a"].split(":")[0], link["b"].split(":")[0]
        spine, leaf = (a, b) if a in x_spine else (b, a)
        if spine not in x_spine or leaf not in x_leaf:
            continue
        level = _level(link["id"], statuses)
        x1, y1, x2, y2 = x_spine[spine], y_spine + 16, x_leaf[leaf], y_leaf - 16
        held = drained.get(link["id"], "")
        colour = _DRAINED if held and level in ("ok", "info") else (
            _OK_LINK if level == "ok" else COLOURS[level])
        dash = ' stroke-dasharray="7 5" data-drained="true"' if held else ""
        parts.append(
            f'<line data-entity="{svg_text(link["id"])}" data-level="{level}" '
            f'x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
            f'stroke-width="{2 if level == "ok" and not held else 5}" stroke-linecap="round"'
            f'{dash}><title>{svg_text(_title(link["id"], statuses.get(link["id"]), held))}'
            f'</title></line>')
        if level == "critical":  # only the red ones are named: the list names the rest
            mx, my = x1 + (x2 - x1) * 0.55, y1 + (y2 - y1) * 0.55
            w = 0.62 * 14 * len(link["id"]) + 10
            labels.append(f'<rect x="{mx - w / 2:.1f}" y="{my - 13:.1f}" width="{w:.1f}" '
                          f'height="19" rx="3" fill="#ffffff" stroke="{colour}" '
                          f'stroke-width="2"/>')
            labels.append(_text(mx, my + 2, link["id"], 14, weight="bold", fill=colour))
    for name, x, y in [(s, x_spine[s], y_spine) for s in spines] + \
            [(leaf, x_leaf[leaf], y_leaf) for leaf in leaves]:
        level = _level(name, statuses)
        fill = "#ffffff" if level == "ok" else COLOURS[level]
        fg = "#1a1a1a" if level in ("ok", "warning", "nodata") else "#ffffff"
        parts.append(
            f'<g data-entity="{svg_text(name)}" data-level="{level}">'
            f'<title>{svg_text(_title(name, statuses.get(name)))}</title>'
            f'<rect x="{x - box_w / 2:.1f}" y="{y - 16:.1f}" width="{box_w:.1f}" height="32" '
            f'rx="6" fill="{fill}" stroke="#4d4d4d" stroke-width="1.5"/>'
            + _text(x, y + font / 3, name, font, weight="bold", fill=fg) + "</g>")
    for leaf in leaves:
        names = hosts_by_leaf.get(leaf, [])
        if not names:
            continue
        spacing = min(34.0, (leaf_col - 8) / len(names))
        size = max(4.0, min(18.0, spacing * 0.75))
        named = spacing >= 22
        x0 = x_leaf[leaf] - spacing * (len(names) - 1) / 2
        for i, host_name in enumerate(names):
            level = _level(host_name, statuses)
            held = drained.get(host_name, "")
            box = ' stroke-dasharray="3 2" stroke-width="2"' if held else ""
            hx = x0 + spacing * i
            wire = _DRAINED if held and level in ("ok", "info") else (
                _OK_LINK if level == "ok" else COLOURS[level])
            parts.append(f'<line x1="{x_leaf[leaf]:.1f}" y1="{y_leaf + 16:.1f}" x2="{hx:.1f}" '
                         f'y2="{y_host - size / 2:.1f}" stroke="{wire}" '
                         f'stroke-width="{1.5 if level == "ok" else 5}"/>')
            parts.append(
                f'<g data-entity="{svg_text(host_name)}" data-level="{level}">'
                f'<title>{svg_text(_title(host_name, statuses.get(host_name), held))}</title>'
                f'<rect x="{hx - size / 2:.1f}" y="{y_host - size / 2:.1f}" width="{size:.1f}" '
                f'height="{size:.1f}" rx="2" fill="{COLOURS[level]}" '
                f'stroke="{_DRAINED if held else "#4d4d4d"}"{box}/></g>')
            red = level == "critical"
            if red or named:
                labels.append(_text(hx, y_host + size / 2 + (14 if i % 2 == 0 else 28),
                                    host_name, 15 if red else 11,
                                    weight="bold" if red else "normal",
                                    fill=COLOURS[level] if red else "#4d4d4d"))
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" class="rw-fabric" data-mode="picture" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" width="100%" '
           f'style="background:#fafafa;border-radius:8px">'
           + "".join(parts) + "".join(labels) + "</svg>")
    return Drawing(svg, "picture", len(parts))


def _tiles(topo: TopologyView, statuses: Mapping[str, EntityStatus]) -> Drawing:
    leaf_problems: dict[str, list[EntityStatus]] = {leaf: [] for leaf in topo.leaves}
    spine_problems: dict[str, list[EntityStatus]] = {s: [] for s in topo.spines}
    owner: dict[str, str] = {}
    for link in topo.links:
        ends = [link["a"].split(":")[0], link["b"].split(":")[0]]
        owner[link["id"]] = next((e for e in ends if e in leaf_problems), ends[0])
    for host in topo.hosts:
        owner[host["name"]] = host["port"].split(":")[0]
    for entity, status in statuses.items():
        if entity in leaf_problems:
            leaf_problems[entity].append(status)
        elif entity in spine_problems:
            spine_problems[entity].append(status)
        elif entity in owner and owner[entity] in leaf_problems:
            leaf_problems[owner[entity]].append(status)
        elif ":" in entity and entity.split(":")[0] in leaf_problems:
            leaf_problems[entity.split(":")[0]].append(status)
    per_row = 32
    tile, gap = 30.0, 6.0
    parts: list[str] = []
    labels: list[str] = []
    y = 34.0

    def row_of(names: list[str], problems: dict[str, list[EntityStatus]], y0: float,
               title: str) -> float:
        parts.append(_text(10, y0 - 8, title, 19, anchor="start", weight="bold"))
        for i, name in enumerate(names):
            r, c = divmod(i, per_row)
            x, yy = 10 + c * (tile + gap), y0 + r * (tile + gap + 12)
            found = problems[name]
            level = worst([s.level for s in found])
            why = "; ".join(f"{s.entity}: {s.alert}" for s in found[:6]) or "ok"
            parts.append(
                f'<g data-entity="{svg_text(name)}" data-level="{level}">'
                f'<title>{svg_text(name)}: {svg_text(why)}</title>'
                f'<rect x="{x:.1f}" y="{yy:.1f}" width="{tile}" height="{tile}" rx="4" '
                f'fill="{COLOURS[level]}" stroke="#4d4d4d" stroke-width="0.8"/></g>')
            if level != "ok":
                labels.append(_text(x + tile / 2, yy + tile + 17, name, 22, weight="bold",
                                    fill=COLOURS[level]))
        rows = -(-len(names) // per_row)
        return y0 + rows * (tile + gap + 12) + 28

    y = row_of(list(topo.spines), spine_problems, y, f"spines ({len(topo.spines)})")
    y = row_of(list(topo.leaves), leaf_problems, y,
               f"leaves ({len(topo.leaves)}): a tile is the worst of the leaf, its uplinks and "
               f"its hosts")
    width = 20 + per_row * (tile + gap)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" class="rw-fabric" data-mode="tiles" '
           f'viewBox="0 0 {width:.0f} {y:.0f}" width="100%" '
           f'style="background:#fafafa;border-radius:8px">' + "".join(parts) + "".join(labels)
           + "</svg>")
    return Drawing(svg, "tiles", len(parts))
