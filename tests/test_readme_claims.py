"""README's claims that a test can check, checked against the tool: `days` forms, the catalog-gap
messages it quotes, and what `gpustack new` writes when installed from a checkout."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, spec_text
from gpustack.cli import main
from gpustack.errors import SpecError
from gpustack.spec import load_text
from gpustack.spec.units import parse_days

README = (ROOT / "README.md").read_text()
MON_FRI = (0, 1, 2, 3, 4)


def _schedule_row() -> str:
    [row] = [line for line in README.splitlines() if line.startswith("| `schedule` |")]
    return row


@pytest.mark.parametrize(("form", "days"), [
    ("Mon-Fri", MON_FRI), ("Fri-Mon", (0, 4, 5, 6)), ("Mon,Wed,Fri", (0, 2, 4)), ("Monday-Friday", MON_FRI),
    ("daily", tuple(range(7))), ("weekdays", MON_FRI), ("weekends", (5, 6)), ("Weekdays", MON_FRI),
])
def test_every_days_form_the_readme_lists_means_what_it_says(form, days):
    assert f"`{form}`" in _schedule_row()
    assert parse_days(form) == days


def test_the_readme_lists_every_days_alias():
    from gpustack.spec import units

    for alias in units._DAY_ALIASES:
        assert f"`{alias}`" in _schedule_row()


def _quoted(after: str) -> list[str]:
    paragraph = README[README.index(after):].split("\n\n")[0]
    return [" ".join(q.split()) for q in re.findall(r'"([^"]+)"', paragraph)]


def test_the_catalog_gap_messages_are_the_ones_the_readme_quotes():
    quotes = _quoted("When a region or a GPU is missing")
    messages = []
    for region, gpu in (("ca-west-1", "A10G"), ("af-south-1", "H200")):
        text = spec_text([{"name": "w", "kind": "training", "gpu": gpu}]).replace("us-east-1", region)
        with pytest.raises(SpecError) as info:
            load_text(text, "spec.yaml")
        messages += [p.message for p in info.value.problems]
    with pytest.raises(SpecError) as info:
        load_text(spec_text([{"name": "w", "kind": "training", "gpu": "A10G"}], ("gcp",)), "spec.yaml")
    messages += [p.message for p in info.value.problems]
    said = " | ".join(messages).replace("`", "")
    assert len(quotes) == 6
    for quote in quotes:
        assert quote.replace("`", "") in said, quote


def test_new_installed_from_a_checkout_writes_a_placeholder_and_says_so(tmp_path, capsys):
    """README: installed from this checkout, the project gets a placeholder and `gpustack new` warns."""
    assert "the project gets a placeholder that fails loudly at `pip install`" in " ".join(README.split())
    assert main(["new", str(tmp_path / "p"), "--cloud", "aws"]) == 0  # conftest: installed from a checkout
    written = (tmp_path / "p" / "requirements.txt").read_text().splitlines()[-1]
    assert written.startswith("gpustack[aws] @ ") and ".invalid" in written
    assert "warning: requirements.txt names gpustack by a placeholder address" in capsys.readouterr().err
