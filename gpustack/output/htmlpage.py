"""A self-contained HTML page built as data: an element tree whose text and attributes are escaped by the
serialiser, so no spec value ever becomes markup. No script, no network resource; a print stylesheet.

`page(title, body)` returns the serialised document; `el(tag, attrs, *children)` builds an element
(children: elements or strings). The palette is Okabe and Ito's, distinct under the common
colour-vision deficiencies (https://jfly.uni-koeln.de/color/, read 2026-12-02).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence

from gpustack.output.jinja import GENERATED_BY


# Okabe-Ito: orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple, black.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000")
SAVING = "#009E73"  # a step that lowers the cost
LEVEL = "#0072B2"  # a cost level (baseline, planned)
RISE = "#D55E00"  # a cost that grows
IDLE = "#E69F00"  # idle GPU-hours

# Controls and invisible formatting never reach the page (they hide text or reorder it).
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")

STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111;margin:1.5em auto;max-width:70em;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:2px solid #0072B2;margin-top:2em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #bbb;padding:.2em .5em;vertical-align:top}
th{background:#eef3f8;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}.row>*{flex:0 1 auto}
svg{max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif}
.note{color:#444}.warn{color:#8a3a00}code{background:#f3f3f3;padding:0 .2em}
footer{margin-top:3em;color:#555;font-size:.9em}
@media print{body{max-width:none;margin:0;font-size:10pt}h2{break-before:page}h2:first-of-type{break-before:auto}
section,table,svg{break-inside:avoid}th{background:none}a{color:inherit;text-decoration:none}}
"""


_LINE_AFTER = {"head", "meta", "title", "style", "h1", "h2", "h3", "p", "section", "div", "table", "caption",
               "thead", "tbody", "tr", "ul", "li", "figure", "figcaption", "svg", "desc", "rect", "line", "text"}


def clean(value: object) -> str:
    """A value as one line of visible text (the serialiser escapes it); a space at either end stays, as it
    separates the text from the element beside it."""
    text = _INVISIBLE.sub("", str(value))
    words = " ".join(text.split())
    if not words:
        return " " if text[:1].isspace() else ""
    return (" " if text[:1].isspace() else "") + words + (" " if text[-1:].isspace() else "")


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: ET.Element | str | None) -> ET.Element:
    element = ET.Element(tag, {k: clean(v) for k, v in (attrs or {}).items()})
    add(element, *children)
    return element


def add(parent: ET.Element, *children: ET.Element | str | None) -> ET.Element:
    """Append children in order; strings become text after the last child element."""
    for child in children:
        if child is None:
            continue
        if isinstance(child, str):
            text = clean(child)
            if len(parent):
                parent[-1].tail = (parent[-1].tail or "") + text
            else:
                parent.text = (parent.text or "") + text
        else:
            parent.append(child)
    return parent


def table(header: Sequence[str], rows: Iterable[Sequence[ET.Element | str]], numeric: str = "",
          caption: str | None = None) -> ET.Element:
    """A table; `numeric` marks the right-aligned columns with 'n' (e.g. 'llnn')."""
    out = el("table", {}, el("caption", {}, caption) if caption else None,
             el("thead", {}, el("tr", {}, *(el("th", {"scope": "col"}, h) for h in header))))
    body = el("tbody")
    for row in rows:
        body.append(el("tr", {}, *(el("td", {"class": "n"} if numeric[i:i + 1] == "n" else {}, cell)
                                   for i, cell in enumerate(row))))
    out.append(body)
    return out


def cents(value: float | None) -> str:
    """USD to the cent, as the JSON rounds it (a dash for unknown)."""
    if value is None:
        return "–"
    rounded = round(value + 0.0, 2)
    return ("-" if rounded < 0 else "") + f"${abs(rounded):,.2f}"


def signed_cents(value: float) -> str:
    rounded = round(value + 0.0, 2)
    return "$0.00" if rounded == 0 else ("+" if rounded > 0 else "-") + f"${abs(rounded):,.2f}"


def page(title: str, *body: ET.Element | str | None) -> str:
    head = el("head", {}, el("meta", {"charset": "utf-8"}),
              el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
              el("meta", {"name": "generator", "content": GENERATED_BY}),
              el("title", {}, title))
    style = ET.SubElement(head, "style")
    style.text = STYLE  # a constant: the one text the serialiser leaves raw
    root = el("html", {"lang": "en"}, head,
              el("body", {}, el("h1", {}, title), *body, el("footer", {}, GENERATED_BY)))
    for element in root.iter():
        if element.tag in _LINE_AFTER and element.tail is None:
            element.tail = "\n"  # one element a line: golden diffs people can review
    return "<!DOCTYPE html>\n" + ET.tostring(root, encoding="unicode", method="html") + "\n"
