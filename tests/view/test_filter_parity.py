"""One filter language (issue 43): ``deuteron view -i`` and ``deuteron serve``'s filter box keep the
same frames and show the same numbers.

The terminal's answers on real profiles are written into ``frontend/src/views/profile/
filter.fixture.json`` beside the page's data for the same profiles (``profile_data``, what
``deuteron serve`` sends); ``filter.test.ts`` runs the page's filter (``filter.ts``) on that data
and asserts it gives them. This test checks the fixture is what today's code says (after a change
to either side: ``.venv/bin/python -m tests.view.test_filter_parity`` writes it again), and that the
terminal's own numbers follow the rules docs/viewing.md states.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from deuteron.formats import profile_stream
from deuteron.model.names import matches
from deuteron.model.tree import Node
from deuteron.render.web.profile import profile_data
from deuteron.view.build import ViewOptions, build
from deuteron.view.processors import pattern_matcher
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "frontend" / "src" / "views" / "profile" / "filter.fixture.json"

# Real profiles, each with the patterns run through both filters: text with C++ and torch
# punctuation, another case, regexes, a name pasted whole (its parentheses a regex's groups), a
# kernel found by its full demangled name only or by its mangled one, and a pattern matching nothing.
CASES = {
    "tests/fixtures/inductor_llama/unplaced.hatchet": [
        "aten::mm",
        "MM",
        "^aten::(mm|fill_)$",
        "triton_(poi|per)_fused",
        "backward",
        "sgemm",
        "LlamaForCausalLM (compiled)",
        "Torch-Compiled Region: 0/0",
        "no_such_frame",
    ],
    "tests/fixtures/proton/proton_shadow.hatchet": [
        "train",
        "FillFunctor",
        "_ZN2at6native",
        "KERNEL",
        "^add_kernel$",
    ],
}


# The fields of the page's data (ProfileData) the filter and buildModel read.
READ = (
    "name", "source", "columns", "primary", "parent", "name_id", "type_id", "names", "full_names",
    "raw_names", "types", "values", "total_nodes", "pruned_nodes", "threshold",
)  # fmt: skip


def _preorder_ids(root: Node) -> dict[tuple[tuple[str, str], ...], int]:
    """Each node's path of keys -> its id in the page's data (preorder, children in order, as
    ``profile_data`` numbers them when it cuts nothing)."""
    ids: dict[tuple[tuple[str, str], ...], int] = {}
    stack: list[tuple[Node, tuple[tuple[str, str], ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        ids[path] = len(ids)
        stack.extend((child, (*path, key)) for key, child in reversed(list(node.children.items())))
    return ids


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else None


def expected(source: str, patterns: list[str]) -> dict[str, Any]:
    """The page's data for one profile, and the terminal's answer for each pattern: the kept
    frames (as the data's node ids), their values per column, and how many frames match."""
    profile = profile_stream.read_profile(str(ROOT / source))
    data = profile_data(profile, source)
    assert data["pruned_nodes"] == 0
    data = {key: data[key] for key in READ}  # what the page's filter reads: a small fixture
    columns = data["columns"]
    whole = build(profile, ViewOptions(metrics=columns)).tree
    ids = _preorder_ids(whole.root)
    cases = []
    for pattern in patterns:
        found = pattern_matcher(pattern)
        count = sum(1 for n in whole.root.walk() if matches(found, n.name))
        shown = build(profile, ViewOptions(metrics=columns, include=pattern)).tree
        kept = _preorder_ids(shown.root)
        nodes = sorted(ids[path] for path in kept)
        by_id = {ids[path]: node for path, node in _nodes_by_path(shown.root).items()}
        values = {c: [_number(by_id[i].metrics.get(c)) for i in nodes] for c in columns}
        cases.append({"pattern": pattern, "matches": count, "nodes": nodes, "values": values})
    return {"source": source, "data": data, "cases": cases}


def _nodes_by_path(root: Node) -> dict[tuple[tuple[str, str], ...], Node]:
    out: dict[tuple[tuple[str, str], ...], Node] = {}
    stack: list[tuple[Node, tuple[tuple[str, str], ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        out[path] = node
        stack.extend((child, (*path, key)) for key, child in node.children.items())
    return out


def fixture() -> dict[str, Any]:
    return {
        "about": "deuteron view -i's frames and numbers on real profiles, for filter.test.ts; written by "
        "`.venv/bin/python -m tests.view.test_filter_parity` (tests/view/test_filter_parity.py checks it)",
        "profiles": [expected(source, patterns) for source, patterns in CASES.items()],
    }


def test_the_pages_fixture_holds_what_deuteron_view_says_today() -> None:
    want = json.loads(json.dumps(fixture()))
    have = json.loads(FIXTURE.read_text())
    assert have == want, (
        "frontend's filter fixture is stale: run .venv/bin/python -m tests.view.test_filter_parity"
    )


def test_root_holds_what_is_kept_and_what_does_not_add_up_is_not_shown_above_a_match() -> None:
    """On the way to a match a frame has none of its own: a time or a count is its kept children's
    sum (ROOT: all that is kept), an average or a rate is not shown; a match keeps its numbers."""
    profile = profile_stream.read_profile(str(ROOT / "tests/fixtures/inductor_llama/unplaced.hatchet"))
    columns = ["time/ms", "cpu_time/ms", "count", "avg_time/us", "calls"]
    whole = build(profile, ViewOptions(metrics=columns)).tree
    shown = build(profile, ViewOptions(metrics=columns, include="aten::mm")).tree
    root = shown.root
    top = list(root.children.values())
    for column in ("time/ms", "count"):
        assert root.metrics[column] == sum(c.metrics[column] for c in top)
        assert root.metrics[column] < whole.root.metrics[column]
    assert math.isnan(root.metrics["avg_time/us"]) and math.isnan(root.metrics["calls"])
    mm = [n for n in shown.root.walk() if n.name == "aten::mm"]
    originals = {id(n): n for n in whole.root.walk() if n.name == "aten::mm"}
    assert mm and len(mm) == len(originals)
    assert sorted(n.metrics["avg_time/us"] for n in mm) == sorted(
        n.metrics["avg_time/us"] for n in originals.values()
    )


def test_patterns_are_text_or_regex_found_anywhere_case_ignored() -> None:
    found = pattern_matcher("MM")
    assert found("aten::mm") and found("aten::addmm") and not found("aten::add")
    assert pattern_matcher("optimizer.step (AdamW)")("optimizer.step (AdamW)")  # pasted whole
    assert not pattern_matcher("^mm")("aten::mm") and pattern_matcher("^aten")("aten::mm")
    assert pattern_matcher("a.c")("abc")  # a regex where it is one


def test_the_command_says_the_runs_total_beside_a_filtered_root_and_a_bad_pattern_in_one_line(
    tmp_path: Path,
) -> None:
    path = str(ROOT / "tests/fixtures/proton/proton_shadow.hatchet")
    proc = run_cli("view", path, "-i", "FillFunctor", "-m", "time/ms,count", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "-i 'FillFunctor' keeps 0.002 of the run's 1.132 time/ms (0.2%)" in proc.stderr
    assert proc.stdout.splitlines()[1].split()[:2] == ["0.002", "3"]  # ROOT: what is kept
    bad = run_cli("view", path, "-i", "attn(", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().count("\n") == 0 and "bad regular expression 'attn('" in bad.stderr


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(fixture(), indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {FIXTURE.relative_to(ROOT)}")
