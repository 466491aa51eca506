"""``deuteron bisect`` as a user runs it: a real git repository whose Triton kernel turns wrong at
its fifth commit, bisected in a fresh process; the bad inputs, each one line; Triton releases
when a second Triton is at hand (CI's ``.ci-triton36``). The decision logic of ``--slower`` and the
IR comparison are tested apart, with recorded numbers and texts, in test_decisions.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

KERNEL = """\
import sys

import params
import triton
import triton.language as tl


@triton.jit
def scale_kernel(a, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = offs * a + 1
    tl.device_print("x", x)


scale_kernel[(1,)](params.SCALE, BLOCK=8)
if "--version" in sys.argv:
    print("Triton", triton.__version__)
if "--strict" in sys.argv and hasattr(params, "UNUSED"):
    sys.exit("params.UNUSED is set")
"""

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight commits: 1 the kernel, 2-4 notes and a harmless edit, 5 the planted wrong constant
    (``+ 1`` becomes ``+ 2``: a wrong result, and a change of the TTIR), 6-8 notes."""
    root = tmp_path_factory.mktemp("bisect") / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "params.py").write_text("SCALE = 3\n")
    (root / "kernel.py").write_text(KERNEL)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "commit 1: the kernel")
    for i in range(2, 9):
        if i == 5:
            (root / "kernel.py").write_text(KERNEL.replace("offs * a + 1", "offs * a + 2"))
        elif i == 3:
            (root / "params.py").write_text("SCALE = 3\nUNUSED = 7  # a harmless edit\n")
        else:
            with open(root / "NOTES", "a") as f:
                f.write(f"note {i}\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", f"commit {i}: {'planted' if i == 5 else 'notes'}")
    return root


def _sha(repo: Path, ref: str) -> str:
    return _git(repo, "rev-parse", "--short", ref)


@pytest.mark.slow
def test_names_commit_5_and_the_changed_stage(repo: Path) -> None:
    done = run_cli(
        "bisect", "--good", "HEAD~7", "--bad", "HEAD", "--wrong", "kernel.py", cwd=repo, timeout=600
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    first_bad = _sha(repo, "HEAD~3")
    assert f"first bad: {first_bad} commit 5: planted" in out
    assert f"last good: {_sha(repo, 'HEAD~4')} commit 4: notes" in out
    assert "changed stage: ttir" in out
    assert "+    %x = arith.constant dense<2>" in out  # the diff excerpt, without location info
    assert "loc(" not in out
    # each step's verdict as it goes, the endpoints first
    assert out.index("good? ") < out.index("bad?  ") < out.index("[1/") < out.index("first bad:")
    # the user's checkout is untouched and no worktree is left behind
    assert _git(repo, "worktree", "list").count("\n") == 0
    assert _git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["--good", "nosuchref", "--bad", "HEAD"], "--good nosuchref: no such commit in"),
        (["--good", "HEAD", "--bad", "main"], "are the same commit"),
        (["--good", "HEAD", "--bad", "HEAD~2"], "is not on the first-parent history of --bad HEAD~2"),
        (["--good", "HEAD~7", "--bad", "HEAD~5"], "--bad HEAD~5 is good too"),  # commit 3: same output
        (["--repo", "nowhere", "--good", "HEAD~7", "--bad", "HEAD"], "--repo nowhere: no such folder"),
        (["--good", "triton==3.6", "--bad", "HEAD"], "give two Triton releases (triton==X) or two commits"),
        (["--good", "triton==x.y", "--bad", "triton==3.9.0"], "write a release as triton==3.6.0"),
    ],
)
def test_bad_input_is_one_line(repo: Path, words: list[str], expected: str) -> None:
    done = run_cli("bisect", *words, "--wrong", "--no-stages", "kernel.py", cwd=repo)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deuteron: error: "), done.stderr
    assert expected in lines[0]
    assert "Traceback" not in done.stderr


def test_an_uncommitted_script_imports_each_commits_modules(repo: Path, tmp_path: Path) -> None:
    """A script the commits lack (a reproducer not committed) is copied into each worktree, so it
    imports that commit's params.py (which gains UNUSED at commit 3), not the checkout's."""
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / "probe.py").write_text("import params\n\nprint('UNUSED' in vars(params))\n")
    done = run_cli(
        "bisect", "--good", "HEAD~7", "--bad", "HEAD", "--wrong", "--no-stages", "probe.py", cwd=clone
    )
    assert done.returncode == 0, done.stderr
    assert f"first bad: {_sha(clone, 'HEAD~5')} commit 3: notes" in done.stdout
    assert _git(clone, "status", "--porcelain") == "?? probe.py"


def test_good_already_bad(repo: Path) -> None:
    """With --strict the script fails from commit 3 on: commit 4 cannot be the good one."""
    done = run_cli(
        "bisect", "--good", "HEAD~4", "--bad", "HEAD", "--wrong", "kernel.py", "--strict", cwd=repo
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"deuteron: error: --good HEAD~4 is bad already ({_sha(repo, 'HEAD~4')}: exit 1: "
    )
    assert "params.UNUSED is set" in lines[0]


def test_a_script_in_no_repository(tmp_path: Path) -> None:
    (tmp_path / "kernel.py").write_text(KERNEL)
    done = run_cli("bisect", "--good", "a", "--bad", "b", "--wrong", "kernel.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "deuteron: error: kernel.py is in no git repository: give the repository with --repo DIR"
    )
    done = run_cli("bisect", "--good", "a", "--bad", "b", "--wrong", "--repo", ".", "kernel.py", cwd=tmp_path)
    assert done.stderr.strip() == "deuteron: error: --repo .: not a git repository"


def test_slower_needs_a_gpu(repo: Path) -> None:
    if os.path.exists("/dev/nvidia0") or os.path.exists("/dev/kfd"):
        pytest.skip("this machine has a GPU")
    done = run_cli("bisect", "--good", "HEAD~7", "--bad", "HEAD", "--slower", "1.1", "kernel.py", cwd=repo)
    assert done.returncode == 2
    assert done.stderr.strip().startswith(
        "deuteron: error: --slower times the kernels on a GPU, and this machine has none"
    )


def test_a_release_that_does_not_exist(repo: Path, tmp_path: Path) -> None:
    """PyPI's answer, as a file: the release named is not in it (no network needed)."""
    import platform
    import sys

    wheel = (
        f"triton-3.6.0-cp{sys.version_info.major}{sys.version_info.minor}-manylinux_{platform.machine()}.whl"
    )
    index = tmp_path / "triton.json"
    releases = {"3.6.0": [{"filename": wheel, "size": 190000000}], "3.9.0": [{"filename": wheel, "size": 1}]}
    index.write_text(json.dumps({"releases": releases}))
    done = run_cli(
        "bisect",
        "--good",
        "triton==3.6.0",
        "--bad",
        "triton==3.10.0",
        "--wrong",
        "kernel.py",
        cwd=repo,
        env={"DEUTERON_BISECT_INDEX": index.as_uri(), "DEUTERON_CACHE_DIR": str(tmp_path)},
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith(
        "deuteron: error: --bad triton==3.10.0: no such release on PyPI for this machine "
        "(latest: 3.6.0, 3.9.0)"
    )


TRITON36 = REPO / ".ci-triton36"


@pytest.mark.skipif(
    not (TRITON36 / "triton").is_dir(), reason="no second Triton at .ci-triton36 (CI downloads it)"
)
@pytest.mark.parametrize("differs", [False, True])
@pytest.mark.slow
def test_triton_releases_from_a_local_folder(repo: Path, tmp_path: Path, differs: bool) -> None:
    """Triton 3.6 from CI's folder against the installed Triton: a script that prints Triton's
    version differs (the installed one is the first bad release), one that does not is good on
    both (then --bad is good too). Nothing is downloaded: the cache stays empty."""
    installed = metadata.version("triton")
    args = ["--no-stages", "kernel.py"] if not differs else ["kernel.py", "--version"]
    done = run_cli(
        "bisect",
        "--good",
        "triton==3.6.0",
        "--bad",
        f"triton=={installed}",
        "--triton-versions",
        f"3.6.0,{installed}",
        "--triton-folder",
        f"3.6.0={TRITON36}",
        "--wrong",
        *args,
        cwd=repo,
        env={"DEUTERON_CACHE_DIR": str(tmp_path / "cache")},
        timeout=600,
    )
    assert "downloading" not in done.stdout + done.stderr
    assert not (tmp_path / "cache").exists()
    if differs:
        assert done.returncode == 0, done.stderr
        assert f"first bad: triton=={installed}\n" in done.stdout
        assert "last good: triton==3.6.0" in done.stdout
        assert re.search(r"^changed stage: (ttir|ttgir|llir|ptx) ", done.stdout, re.M), done.stdout
    else:
        assert done.returncode == 2
        assert f"--bad triton=={installed} is good too" in done.stderr
