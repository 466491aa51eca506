"""``deuteron.check.run`` and ``deuteron.explain.run``: the sanitizer and the explainer as a library,
returning model objects, called from a user's own script; and the one error base."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import deuteron
import deuteron.explain
from deuteron import errors
from deuteron.errors import CheckError, DeuteronError, ExplainError, FormatError, TargetError
from tests.helpers.paths import EXAMPLES, REPO

CORPUS = REPO / "tests" / "explain_corpus"

USER_SCRIPT = """
import json, sys
import deuteron
import deuteron.explain

checked = deuteron.check.run(sys.argv[1], "--rows", "8")
explained = deuteron.explain.run(deuteron.Program.script(sys.argv[2], "3"), targets=["cuda:90"])
doc = explained.report.as_json()
print(json.dumps({
    "check": {
        "exit_code": checked.exit_code,
        "ended_by": checked.ended_by,
        "launches": checked.report.launches,
        "findings": [[f.kind, f.severity, f.kernel, f.line, f.tensor] for f in checked.report.findings],
        "summary": checked.report.summary(),
    },
    "explain": {
        "exit_code": explained.exit_code,
        "kernels": [[a.spec.name, a.spec.target.name, a.registers is not None]
                    for a in explained.report.kernels],
        "findings": [[f.kind, f.severity, f.line, f.kernel, f.file] for a in explained.report.kernels
                     for f in a.findings],
        "doc_keys": sorted(doc),
    },
}))
"""


def test_check_and_explain_run_from_a_users_script(tmp_path: Path) -> None:
    script = tmp_path / "use_the_library.py"
    script.write_text(USER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, str(script), str(EXAMPLES / "check_me.py"), str(CORPUS / "vector_copy.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    check = out["check"]
    assert check["exit_code"] == 0 and check["ended_by"] == "" and check["launches"] == 1
    assert ["out-of-bounds", "error", "softmax_kernel", 22, "x_ptr"] in check["findings"]
    assert check["summary"].startswith("1 launch and 8 programs checked: 1 error")
    explain = out["explain"]
    assert explain["exit_code"] == 0
    assert explain["kernels"] == [["copy_kernel", "cuda:90", True]]
    vector = [f for f in explain["findings"] if f[0] == "unvectorized-load"]
    assert vector and vector[0][1] == "warning" and vector[0][2] == 13
    assert vector[0][3] == "copy_kernel" and vector[0][4] == str(CORPUS / "vector_copy.py")
    assert explain["doc_keys"] == ["device", "errors", "kernels", "ranking"]


def test_explain_json_is_versioned(tmp_path: Path) -> None:
    from deuteron.formats import explain_json

    body = {"kernels": [], "ranking": [], "device": None, "errors": []}
    path = explain_json.write(body, tmp_path / "ex.json")
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"]) == ("deuteron-explain", 1)
    assert explain_json.read(path)["kernels"] == []
    (tmp_path / "other.json").write_text('{"kernels": []}')
    with pytest.raises(FormatError, match="not a deuteron explain report"):
        explain_json.read(tmp_path / "other.json")


def test_library_entries_refuse_bad_input_with_one_error_type(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="script 'missing.py' does not exist"):
        deuteron.check.run("missing.py")
    with pytest.raises(ExplainError, match="unknown target 'cuda:75'"):
        deuteron.explain.run(str(CORPUS / "vector_copy.py"), targets=["cuda:75"])
    with pytest.raises(ExplainError, match="--device only applies with --profile"):
        deuteron.explain.run(str(CORPUS / "vector_copy.py"), device="h100")
    with pytest.raises(CheckError, match="unknown check"):
        deuteron.check(checks=["bounds"])


@pytest.mark.parametrize("name", errors.__all__)
def test_every_user_error_is_a_deuteron_error(name: str) -> None:
    assert issubclass(getattr(errors, name), DeuteronError)
    assert deuteron.DeuteronError is DeuteronError


def test_a_missing_triton_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install deuteron` alone has no Triton: run/check/explain say which extra brings it."""
    import deuteron.triton as adapter

    monkeypatch.setattr(adapter, "installed_version", lambda: "")
    error = adapter.unsupported("interpreter (No module named 'triton')")
    assert str(error) == "triton is not installed (needed for interpreter): pip install 'deuteron[triton]'"
    monkeypatch.setattr(adapter, "installed_version", lambda: "3.5.0")
    assert "triton 3.5.0 has no interpreter" in str(adapter.unsupported("interpreter"))
