"""Inline SVG charts as element trees: a cost waterfall, horizontal bars, a week's heat strip and one node's
GPUs with their slices. Every chart carries a <title> and <desc> (its text alternative) and role="img"."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence

from gpustack.output.htmlpage import LEVEL, PALETTE, RISE, SAVING, cents, el, signed_cents

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def chart(width: int, height: int, title: str, desc: str) -> ET.Element:
    return el("svg", {"xmlns": "http://www.w3.org/2000/svg", "viewBox": f"0 0 {width} {height}",
                      "width": width, "height": height, "role": "img", "aria-label": title},
              el("title", {}, title), el("desc", {}, desc))


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def rect(x: float, y: float, w: float, h: float, fill: str, label: str | None = None) -> ET.Element:
    return el("rect", {"x": _num(x), "y": _num(y), "width": _num(max(w, 0.0)), "height": _num(max(h, 0.0)),
                       "fill": fill}, el("title", {}, label) if label else None)


def text(x: float, y: float, value: str, anchor: str = "start") -> ET.Element:
    return el("text", {"x": _num(x), "y": _num(y), "text-anchor": anchor}, value)


def waterfall(title: str, start: tuple[str, float], steps: Sequence[tuple[str, float]], end: tuple[str, float],
              low: float | None = None, high: float | None = None) -> ET.Element:
    """The cost from `start` through each step's saving (positive lowers it) to `end`; the range as a band."""
    levels = [start[1]]
    for _, saving in steps:
        levels.append(levels[-1] - saving)
    top = max([*levels, end[1], high or 0.0, 1.0])
    bars = 2 + len(steps)
    width, height, left, bottom = 110 * bars + 20, 260, 10, 40
    plot = height - bottom - 20
    scale = plot / top

    def y(v: float) -> float:
        return 20 + plot - max(v, 0.0) * scale

    desc = "; ".join([f"{start[0]} {cents(start[1])}", *(f"{name} saves {cents(s)}" for name, s in steps),
                      f"{end[0]} {cents(end[1])}"] + ([f"range {cents(low)} to {cents(high)}"]
                                                     if low is not None and high is not None else []))
    svg = chart(width, height, title, desc)
    svg.append(el("line", {"x1": left, "y1": y(0), "x2": width - 10, "y2": y(0), "stroke": "#555"}))
    x = left + 10

    def label(name: str, value: str) -> None:
        svg.append(text(x + 45, height - bottom + 14, name, "middle"))
        svg.append(text(x + 45, height - bottom + 28, value, "middle"))

    svg.append(rect(x, y(start[1]), 90, y(0) - y(start[1]), LEVEL, f"{start[0]}: {cents(start[1])}"))
    label(start[0], cents(start[1]))
    for (name, saving), before in zip(steps, levels):
        x += 110
        after = before - saving
        fill = SAVING if saving >= 0 else RISE
        svg.append(rect(x, y(max(before, after)), 90, abs(y(before) - y(after)) or 1, fill,
                        f"{name}: {'saves' if saving >= 0 else 'adds'} {cents(abs(saving))}"))
        label(name, signed_cents(-saving))
    x += 110
    if low is not None and high is not None:
        svg.append(rect(x - 4, y(high), 98, y(low) - y(high) or 1, "#CC79A7", f"range {cents(low)} to {cents(high)}"))
    svg.append(rect(x, y(end[1]), 90, y(0) - y(end[1]), LEVEL, f"{end[0]}: {cents(end[1])}"))
    label(end[0], cents(end[1]))
    return svg


def bars(title: str, items: Sequence[tuple[str, float]], unit: str = "per month",
         figure: Callable[[float], str] = cents, changes: bool = False) -> ET.Element:
    """Horizontal bars, one per item, colours cycling through the palette; `figure` writes a value. `changes`:
    the values are cost changes, a rise drawn in vermillion and a saving in green."""
    row, label_width, bar_width = 22, 300, 340
    width, height = label_width + bar_width + 110, row * max(len(items), 1) + 10
    top = max([abs(v) for _, v in items] + [1.0])
    desc = "; ".join(f"{name} {figure(v)} {unit}" for name, v in items) or "nothing to show"
    svg = chart(width, height, title, desc)
    for i, (name, value) in enumerate(items):
        y = 5 + i * row
        svg.append(text(label_width - 6, y + 14, name if len(name) <= 46 else name[:45] + "…", "end"))
        w = abs(value) / top * bar_width
        fill = (RISE if value > 0 else SAVING) if changes else PALETTE[i % len(PALETTE)] if value >= 0 else RISE
        svg.append(rect(label_width, y + 2, w or 1, row - 6, fill, f"{name}: {figure(value)} {unit}"))
        svg.append(text(label_width + w + 6, y + 14, figure(value)))
    return svg


def week_strip(title: str, hours: Sequence[Sequence[bool]]) -> ET.Element:
    """Seven rows (Monday first) of 24 hour cells: filled when the pool runs in that hour."""
    cell, left, top = 16, 40, 18
    width, height = left + 24 * cell + 10, top + 7 * cell + 6
    running = sum(sum(day) for day in hours)
    desc = f"{running} of 168 hours a week running; " + "; ".join(
        f"{DAYS[d]}: {_spans(day)}" for d, day in enumerate(hours))
    svg = chart(width, height, title, desc)
    for h in range(0, 24, 3):
        svg.append(text(left + h * cell, top - 6, f"{h:02d}"))
    for d, day in enumerate(hours):
        svg.append(text(4, top + d * cell + 12, DAYS[d]))
        for h, on in enumerate(day):
            svg.append(rect(left + h * cell + 1, top + d * cell + 1, cell - 2, cell - 2, LEVEL if on else "#eeeeee",
                            f"{DAYS[d]} {h:02d}:00 {'running' if on else 'scaled to zero'}"))
    return svg


def _spans(day: Sequence[bool]) -> str:
    spans, h = [], 0
    while h < 24:
        if day[h]:
            end = h
            while end < 24 and day[end]:
                end += 1
            spans.append(f"{h:02d}:00-{end:02d}:00")
            h = end
        else:
            h += 1
    return ", ".join(spans) or "off"


def node(title: str, gpus: Sequence[Sequence[tuple[str, int]]], slots: int) -> ET.Element:
    """One node: a row per GPU, `slots` cells wide, each slice drawn over the cells it takes
    (a MIG profile its compute slices, a time-sliced client one cell)."""
    cell, left, row = 48, 60, 34
    width, height = left + slots * cell + 10, row * len(gpus) + 10
    desc = "; ".join(f"GPU {i}: " + (", ".join(f"{name}" for name, _ in g) or "empty") for i, g in enumerate(gpus))
    svg = chart(width, height, title, desc)
    colours: dict[str, str] = {}
    for i, slices in enumerate(gpus):
        y = 5 + i * row
        svg.append(text(4, y + 19, f"GPU {i}"))
        svg.append(rect(left, y, slots * cell, row - 6, "#eeeeee", f"GPU {i}: {slots} slots"))
        x = left
        for name, size in slices:
            fill = colours.setdefault(name, PALETTE[len(colours) % len(PALETTE)])
            svg.append(rect(x + 1, y + 1, size * cell - 2, row - 8, fill, f"GPU {i}: {name}"))
            svg.append(text(x + size * cell / 2, y + 17, name if len(name) * 6 < size * cell else "", "middle"))
            x += size * cell
    return svg


__all__ = ["bars", "node", "waterfall", "week_strip"]
