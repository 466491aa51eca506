"""``--summary`` and ``--flat`` of one job's ranks (issue 43), on the real two-rank DDP job of
``tests/fixtures/ranks/ddp`` (rank 1 the planted straggler): the job's summary and the flat view
give the merged tree's numbers (min, median, max over the ranks) and name the straggler."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from deuteron.formats import profile_stream
from deuteron.render.json_tree import render_json
from deuteron.view.build import ViewOptions, build_ranks
from tests.helpers.cli import run_cli

DDP = Path(__file__).resolve().parents[1] / "fixtures" / "ranks" / "ddp"
RANKS = [str(DDP / f"deuteron.rank{r}.hatchet.gz") for r in (0, 1)]


def _tree(node: dict[str, Any], found: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    found.setdefault(node["name"], []).append(node["metrics"])
    for child in node.get("children", []):
        _tree(child, found)
    return found


def test_summary_of_merged_ranks_gives_roots_min_median_max_and_names_the_straggler(tmp_path: Path) -> None:
    proc = run_cli("view", *RANKS, "--summary", "-d", "1", "-m", "time/ms,count", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "2 ranks of job torchrun:vm:1084:19728 (world size 2)"
    root = lines[-1].split()
    assert root[-1] == "ROOT"
    for k, column in enumerate(("time/ms", "count")):
        line = next(x for x in lines if x.startswith(f"{column} at ROOT per rank: "))
        said = re.search(r"min (\S+) \(rank \d\), median (\S+), max (\S+) \(rank \d\)", line)
        assert said is not None, line
        assert list(said.groups()) == root[3 * k : 3 * k + 3], (
            line,
            lines[-1],
        )  # the tree's ROOT, as printed
    assert (
        "time/ms at ROOT per rank: min 202.930 (rank 1), median 257.068, max 311.206 (rank 0)" in proc.stdout
    )
    assert any(x.startswith("straggler: rank 1: the others wait 192.04 ms for it") for x in lines)
    assert any(
        x.startswith("GPU compute per rank (kernels less collectives): min 112.40 ms (rank 0)") for x in lines
    )


def test_flat_of_merged_ranks_agrees_with_the_merged_tree_and_marks_the_straggler(tmp_path: Path) -> None:
    flat = run_cli("view", *RANKS, "--flat", "0", "--json", "-m", "time/ms,count", cwd=tmp_path)
    assert flat.returncode == 0, flat.stderr
    doc = json.loads(flat.stdout)
    assert doc["ranks"] == ["0", "1"] and doc["straggler"] == "1"
    # the merged tree, as the same command's --json writes it (render_json of build_ranks)
    merged = build_ranks(
        [profile_stream.read_profile(r) for r in RANKS], ViewOptions(metrics=["time/ms", "count"])
    )
    out = io.StringIO()
    render_json(merged.tree, merged.columns, out)
    frames = _tree(json.loads(out.getvalue())["tree"], {})
    compared = 0
    for row in doc["rows"]:
        if row["places"] != 1 or len(frames.get(row["name"], [])) != 1:
            continue  # a name in one place on every rank: its total is that frame's
        node = frames[row["name"]][0]
        for column in ("time/ms", "count"):
            for stat in ("min", "median", "max"):
                want = node[f"{column} ({stat})"]
                have = row["total"][column][stat]
                assert abs(have - want) <= 1e-9 * max(1.0, abs(want)), (row["name"], column, stat, have, want)
        compared += 1
    assert compared >= 20
    forward = next(r for r in doc["rows"] if r["name"] == "DistributedDataParallel.forward")
    assert forward["max_rank"] == "1"
    text = run_cli("view", *RANKS, "--flat", "3", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    out = text.stdout.splitlines()
    assert out[0] == "straggler: rank 1 (* where it holds the largest total)"
    assert out[1].split()[:3] == ["total", "time/ms", "(min)"] and out[1].endswith("max at  name")
    assert len(out) == 5 and "rank 0  backward" in out[2]
