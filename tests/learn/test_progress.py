"""The progress file: where it lives, a round trip, and a damaged file (kept aside, started afresh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deuteron.learn.progress import FORMAT, Progress, data_dir, progress_path


def test_it_lives_in_the_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DEUTERON_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert progress_path() == tmp_path / "xdg" / "deuteron" / "learn" / "progress.json"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_dir() == tmp_path / "home" / ".local" / "share" / "deuteron"
    monkeypatch.setenv("DEUTERON_DATA_DIR", str(tmp_path / "mine"))
    assert progress_path() == tmp_path / "mine" / "learn" / "progress.json"


def test_a_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "learn" / "progress.json"
    progress = Progress.load(path)
    assert progress.status("01_vector_add") == "new" and not progress.warning
    progress.record_check("01_vector_add", passed=False)
    progress.record_check("02_transpose", passed=True)
    progress.see_hints("01_vector_add", 2)
    again = Progress.load(path)
    assert again.status("01_vector_add") == "tried"
    assert again.status("02_transpose") == "done"
    assert again.hints_seen("01_vector_add") == 2
    assert again.exercises["01_vector_add"]["checks"] == 1
    document = json.loads(path.read_text())
    assert document["format"] == FORMAT and document["version"] == 1
    assert [p.name for p in path.parent.iterdir()] == ["progress.json"]  # no temporary file left


def test_done_stays_done_after_a_failed_check(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    progress = Progress.load(path)
    progress.record_check("03_outer_add", passed=True)
    progress.record_check("03_outer_add", passed=False)
    again = Progress.load(path)
    assert again.status("03_outer_add") == "done"
    assert again.exercises["03_outer_add"]["checks"] == 2


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "not JSON"),
        ('{"format": "something-else"}', "format"),
        (json.dumps({"format": FORMAT, "version": 99, "exercises": {}}), "version 99"),
        (json.dumps({"format": FORMAT, "version": 1, "exercises": []}), "exercises"),
        (json.dumps({"format": FORMAT, "version": 1, "exercises": {"x": {"status": "won"}}}), "status"),
        (
            json.dumps({"format": FORMAT, "version": 1, "exercises": {"x": {"status": "done", "hints": -1}}}),
            "hints",
        ),
    ],
)
def test_a_damaged_file_is_kept_aside_with_one_line_and_progress_starts_afresh(
    tmp_path: Path, text: str, why: str
) -> None:
    path = tmp_path / "progress.json"
    path.write_text(text)
    progress = Progress.load(path)
    assert why in progress.warning and "\n" not in progress.warning
    assert "progress.json.corrupt" in progress.warning
    assert progress.exercises == {}
    assert (tmp_path / "progress.json.corrupt").read_text() == text
    progress.record_check("01_vector_add", passed=True)
    assert Progress.load(path).status("01_vector_add") == "done"


def test_a_folder_that_cannot_be_written_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    progress = Progress.load(blocker / "learn" / "progress.json")  # a folder inside a file
    progress.record_check("01_vector_add", passed=True)
    assert "cannot save progress" in progress.warning
