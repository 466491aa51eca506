"""One schema for a finding: model.finding.Finding (the Python shape), formats.check_json's
finding_json (its JSON, everywhere one is written) and frontend/src/types.ts's Finding (what the
page reads) name the same fields; the narrower shapes (a finding placed on a tensor's grid, an
explain report's finding) are picks of those keys on both sides."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from deuteron.formats.check_json import finding_json
from deuteron.formats.explain_json import EXPLAIN_FINDING_KEYS, explain_finding_json
from deuteron.model.finding import Finding
from deuteron.render.web.accesses import PLACED_FINDING_KEYS

TYPES = Path(__file__).resolve().parents[2] / "frontend" / "src" / "types.ts"
# The one field a finding's JSON leaves out: where a terminal's caret ends.
NOT_WRITTEN = {"end_column"}


def _interface_fields(name: str) -> list[str]:
    text = TYPES.read_text()
    body = re.search(rf"export interface {name} \{{\n(.*?)\n\}}", text, flags=re.S)
    assert body, f"types.ts has no interface {name}"
    return re.findall(r"^  (\w+)\??:", body.group(1), flags=re.M)


def _picked(name: str) -> list[str]:
    found = re.search(rf"export type {name} = Pick<Finding, ([^>]*)>", TYPES.read_text())
    assert found, f"types.ts has no {name} picked from Finding"
    return re.findall(r'"(\w+)"', found.group(1))


def _example() -> Finding:
    return Finding(
        "out-of-bounds", "error", "store past the end", file="k.py", line=3, column=4, program=(1, 0, 0)
    )


def test_the_json_writes_every_field_of_the_dataclass_under_its_own_name() -> None:
    fields = {f.name for f in dataclasses.fields(Finding)}
    assert set(finding_json(_example())) == fields - NOT_WRITTEN
    assert finding_json(_example())["column"] == 4


def test_the_typescript_finding_has_the_json_keys() -> None:
    assert sorted(_interface_fields("Finding")) == sorted(finding_json(_example()))
    assert "CheckFinding" not in TYPES.read_text()  # one TypeScript shape, not two


def test_the_narrower_shapes_pick_the_same_keys_on_both_sides() -> None:
    written = finding_json(_example())
    assert set(PLACED_FINDING_KEYS) <= set(written)
    assert sorted(_picked("PlacedFinding")) == sorted(PLACED_FINDING_KEYS)
    assert sorted(_picked("ExplainFinding")) == sorted(EXPLAIN_FINDING_KEYS)
    assert explain_finding_json(_example()) == {key: written[key] for key in EXPLAIN_FINDING_KEYS}
