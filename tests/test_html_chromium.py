"""The example's pages opened in headless Chromium (Debian's `chromium` package; the Makefile's test set-up
installs it when root). Without it these tests skip locally and fail in CI."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib

import pytest

from conftest import EXAMPLE
from gpustack.output.html import render_plan_html
from gpustack.output.htmlpage import LEVEL, SAVING, cents
from gpustack.plan import build_plan
from gpustack.spec import load_spec

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("CI"):
    raise RuntimeError("chromium is missing in CI: the Makefile's test set-up installs Debian's chromium package")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package `chromium`)")

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", *args], capture_output=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "plan.html"
    path.write_text(render_plan_html(EXAMPLE_PLAN), encoding="utf-8")
    return path


def test_the_dom_holds_every_target_and_its_planned_total(page_file):
    dom = chromium("--dump-dom", page_file.as_uri()).stdout.decode()
    assert "<svg" in dom and "<script" not in dom
    for t in EXAMPLE_PLAN.targets:
        assert f'id="target-{t.name}"' in dom
        assert f"{cents(t.cost.planned_monthly_usd)}/month planned" in dom


def pixels(png: bytes) -> set[tuple[int, int, int]]:
    """The distinct RGB colours of an 8-bit RGB or RGBA PNG (non-interlaced), decoded with zlib."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            chunks.append(data)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * bpp
    previous, seen = bytearray(stride), set()
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        seen.update(tuple(row[i:i + 3]) for i in range(0, stride, bpp))
        previous = row
    return seen


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_a_screenshot_shows_the_charts_colours(page_file, tmp_path):
    shot = tmp_path / "plan.png"
    chromium("--window-size=1280,1600", f"--screenshot={shot}", page_file.as_uri())
    colours = pixels(shot.read_bytes())
    assert rgb(LEVEL) in colours and rgb(SAVING) in colours  # the waterfall's levels and savings
    assert len(colours) > 50  # text, tables and bars: not a blank page


def test_the_diff_page_opens_with_every_target_and_its_change(tmp_path):
    from gpustack.diff import diff_plans
    from gpustack.output.html import render_diff_html
    from gpustack.output.htmlpage import signed_cents
    from test_diff import NEW_LABEL, OLD_LABEL, changed_example, plan

    diff = diff_plans(EXAMPLE_PLAN, plan(changed_example(), NEW_LABEL), OLD_LABEL, NEW_LABEL)
    path = tmp_path / "diff.html"
    path.write_text(render_diff_html(diff), encoding="utf-8")
    dom = chromium("--dump-dom", path.as_uri()).stdout.decode()
    for t in diff.targets:
        assert f'id="target-{t.name}"' in dom and f"{signed_cents(t.delta_usd)}/month" in dom
