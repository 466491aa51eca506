"""``deuteron learn --notebook``: valid nbformat 4 by structure, and its cells run as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deuteron.cli import main
from deuteron.learn import all_exercises
from tests.helpers.paths import REPO


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(tmp_path)
    assert main(["learn", "--notebook", "learn.ipynb"]) == 0
    return json.loads((tmp_path / "learn.ipynb").read_text())


def test_the_notebook_is_nbformat_4(notebook: dict) -> None:
    assert notebook["nbformat"] == 4 and notebook["nbformat_minor"] >= 5
    assert notebook["metadata"]["kernelspec"]["language"] == "python"
    cells = notebook["cells"]
    assert len(cells) == 2 + 3 * len(all_exercises())
    assert len({c["id"] for c in cells}) == len(cells)
    for cell in cells:
        assert re.fullmatch(r"[A-Za-z0-9-_]{1,64}", cell["id"])
        assert isinstance(cell["source"], list) and all(isinstance(s, str) for s in cell["source"])
        assert all(s.endswith("\n") for s in cell["source"][:-1])
        assert cell["metadata"] == {}
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
        else:
            assert cell["cell_type"] == "markdown" and set(cell) == {"cell_type", "id", "metadata", "source"}
    try:
        import nbformat
    except ImportError:
        return
    nbformat.validate(nbformat.reads(json.dumps(notebook), as_version=4))


def test_every_exercise_has_its_statement_starter_and_check(notebook: dict) -> None:
    cells = notebook["cells"][2:]
    for i, ex in enumerate(all_exercises()):
        statement, starter, check = ("".join(c["source"]) for c in cells[3 * i : 3 * i + 3])
        assert statement.startswith(f"## {ex.number}. ")
        path = f"learn/{ex.name}.py"
        assert starter.splitlines()[0] == f"%%writefile {path}"
        assert f"def {ex.kernel}(" in starter
        assert check == f"check({ex.number}, {path!r});"


def test_the_cells_run_a_solution_to_a_pass_and_the_starter_to_a_fail(notebook: dict, tmp_path: Path) -> None:
    """Run as Jupyter would: the setup cell, then for exercise 1 the %%writefile cell (its body
    written to the file it names) and the check cell; once with the starter, once with the solution."""
    cells = ["".join(c["source"]) for c in notebook["cells"]]
    setup, starter, check = cells[1], cells[3], cells[4]
    path = starter.splitlines()[0].split(" ", 1)[1]
    body = starter.split("\n", 1)[1]
    solution = all_exercises()[0].solution_path.read_text()
    script = (
        f"{setup}\n"
        f"open({path!r}, 'w').write({body!r})\n{check}\n"
        f"open({path!r}, 'w').write({solution!r})\n{check}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    env["DEUTERON_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "0 of 3 shapes pass" in proc.stdout
    assert proc.stdout.index("0 of 3 shapes pass") < proc.stdout.index("all 3 shapes pass")
    progress = json.loads((tmp_path / "data" / "learn" / "progress.json").read_text())
    assert progress["exercises"]["01_vector_add"]["status"] == "done"
