"""The progress file: where it lives, a round trip, a damaged file (kept aside, started afresh), one
that cannot be read or written (never replaced, one warning), and hints (never a status)."""

from __future__ import annotations

import json
import os
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


def test_a_file_that_is_not_utf8_is_kept_aside_like_any_damaged_one(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    data = b'{"format": "deuteron-learn-progress", "\xff\xfe": 1}'
    path.write_bytes(data)
    progress = Progress.load(path)
    assert "not UTF-8" in progress.warning and "kept it as progress.json.corrupt" in progress.warning
    assert (tmp_path / "progress.json.corrupt").read_bytes() == data
    progress.record_check("01_vector_add", passed=False)
    assert Progress.load(path).status("01_vector_add") == "tried"


def test_a_file_that_cannot_be_read_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.mkdir()  # read_bytes fails (is a directory), as a file without read permission does
    (path / "mine").write_text("keep")
    progress = Progress.load(path)
    assert progress.read_only
    assert progress.take_warning() == f"cannot read {path} (Is a directory); progress is not kept this time"
    assert progress.warning == ""  # taken once
    progress.record_check("01_vector_add", passed=True)
    progress.see_hints("01_vector_add", 2)
    assert progress.warning == ""  # nothing saved, so no second warning
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"] and (path / "mine").read_text() == "keep"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file without read permission")
def test_a_file_without_read_permission_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text("{}")
    path.chmod(0)
    try:
        progress = Progress.load(path)
        assert "Permission denied" in progress.warning and progress.read_only
        progress.record_check("01_vector_add", passed=True)
        assert path.stat().st_mode & 0o777 == 0 and [p.name for p in tmp_path.iterdir()] == ["progress.json"]
    finally:
        path.chmod(0o600)
    assert path.read_text() == "{}"


def test_a_damaged_file_that_cannot_be_kept_aside_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text("{not json")
    (tmp_path / "progress.json.corrupt").mkdir()  # a folder in the way of the backup
    (tmp_path / "progress.json.corrupt" / "x").write_text("")
    progress = Progress.load(path)
    assert "not JSON" in progress.warning and "cannot be kept aside" in progress.warning
    assert "progress is not kept this time" in progress.warning and "\n" not in progress.warning
    progress.record_check("01_vector_add", passed=True)
    assert path.read_text() == "{not json"


def test_a_failed_save_warns_once_and_keeps_the_first_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    progress = Progress.load(blocker / "learn" / "progress.json")
    progress.record_check("01_vector_add", passed=False)
    first = progress.take_warning()
    assert first.startswith("cannot save progress") and first.endswith("progress is not kept this time")
    progress.see_hints("01_vector_add", 1)
    progress.record_check("01_vector_add", passed=True)
    assert progress.warning == ""  # said once


def test_hints_keep_their_count_and_leave_the_status_to_checks(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    progress = Progress.load(path)
    progress.see_hints("04_row_sum", 2)
    again = Progress.load(path)
    assert again.status("04_row_sum") == "new" and again.hints_seen("04_row_sum") == 2
    assert not again.warning  # "new" with hints is a valid entry
    again.record_check("04_row_sum", passed=False)
    assert Progress.load(path).status("04_row_sum") == "tried"
    again.see_hints("04_row_sum", 3)
    assert Progress.load(path).status("04_row_sum") == "tried"  # a hint never lowers it either
    again.record_check("04_row_sum", passed=True)
    again.see_hints("04_row_sum", 4)
    final = Progress.load(path)
    assert final.status("04_row_sum") == "done" and final.hints_seen("04_row_sum") == 4
