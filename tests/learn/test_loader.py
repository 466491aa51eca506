"""A learner's file that cannot give a kernel is one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from deuteron.learn.errors import LearnError
from deuteron.learn.grade import prepare
from deuteron.learn.loader import load_kernel


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import triton\ndef add_kernel(:\n", ":2: syntax error"),
        ("import triton\nx = 1 / 0\n", ":2: ZeroDivisionError: division by zero (while loading the file)"),
        ("import triton\n", "has no function add_kernel"),
        ("def add_kernel(x):\n    pass\n", "is not a @triton.jit kernel"),
        ("import no_such_module_here\n", "ModuleNotFoundError"),
        ("raise SystemExit(3)\n", "SystemExit"),
    ],
)
def test_each_way_a_file_fails_is_one_line(tmp_path: Path, source: str, expected: str) -> None:
    prepare()
    path = tmp_path / "k.py"
    path.write_text(source)
    with pytest.raises(LearnError) as info:
        load_kernel(path, "add_kernel")
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_missing_file_a_folder_and_binary_junk(tmp_path: Path) -> None:
    with pytest.raises(LearnError, match="no such file"):
        load_kernel(tmp_path / "nope.py", "k")
    with pytest.raises(LearnError, match="is not a file"):
        load_kernel(tmp_path, "k")
    junk = tmp_path / "junk.py"
    junk.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LearnError, match="not UTF-8"):
        load_kernel(junk, "k")


def test_an_edited_file_is_loaded_afresh(tmp_path: Path) -> None:
    """A notebook checks, edits and checks again within a second: the second load sees the edit."""
    prepare()
    path = tmp_path / "k.py"
    body = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\nVALUE = {}\n"
    )
    path.write_text(body.format(1))
    first = load_kernel(path, "k")
    path.write_text(body.format(2))
    second = load_kernel(path, "k")
    assert first.fn.__globals__["VALUE"] == 1 and second.fn.__globals__["VALUE"] == 2
