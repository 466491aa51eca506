"""Every ``deuteron`` command in the docs runs as typed, and every output they show is what it prints.

The pages are README.md and every ``docs/*.md``. Conventions in their Markdown:

- In a ```` ```bash ```` block, each line that starts with ``deuteron `` is a command. A comment
  after it starts with two spaces and ``#``. Leading ``NAME=value`` words set environment
  variables (``RANK=1 deuteron run ...``); a word with ``*`` or ``?`` is expanded as a shell would.
- In a ```` ```console ```` block, each line that starts with ``$ deuteron `` is a command, and the
  lines after it, up to the next ``$ `` line or the block's end, are its output. That output must
  match what the command prints (stdout then stderr, or stderr then stdout): each shown line
  appears, and consecutive shown lines are consecutive there too; a line ``...`` marks lines left
  out. Lines are compared with runs of spaces collapsed, every number reduced to its kind (whole,
  or with a point or an exponent: ``156`` is not ``156.000``, and neither is ``-``), and
  ``deuteron serve``'s token reduced to ``/TOKEN/``. So the values may differ, not the shape.
- A block whose fence comes right after a line ``<!-- gpu -->`` (blank lines between allowed)
  needs an NVIDIA GPU: its commands run in ``test_gpu_commands_run_as_typed``, marked ``gpu``,
  and not in the CPU test. The comment is invisible in the built site and on GitHub.

Each page's commands run in order, in a fresh folder that has the repository's ``examples/`` and
``tests/`` beside it, with ``python -m deuteron`` (``run_cli``). The CPU test hides every GPU
(``CUDA_VISIBLE_DEVICES=""``), so a page's output is the same on any machine. A command must exit
with 0, or with 1 where the docs say a finding makes it so (``deuteron check`` of
``examples/check_me.py`` without ``--fixed``, or one that writes ``report.json``), and print no
traceback and no ``deuteron: error``. ``deuteron serve`` without ``--html`` or ``--perfetto`` is started with
``--no-browser --port 0``, asked for its page and its index, which must list something, and stopped.

Keep CI time in mind: the same slow command on two pages runs twice. Show it on one page and link
to it from the other.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli, serving
from tests.helpers.paths import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GPU_MARK = "<!-- gpu -->"
TOKEN = re.compile(r"/[A-Za-z0-9_-]{16}/")
# A number, thousands separators included: a time over 1,000 ms on a slow or busy machine is still "#.#".
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
COMMAND = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*deuteron\s")
FENCE = re.compile(r"^\s*```(\w*)\s*$")


@dataclass
class Command:
    page: str
    line: int  # 1-based line of the command in its page
    text: str  # as typed, without its comment
    gpu: bool
    shown: list[str] | None = None  # the output a console block shows under it
    env: dict[str, str] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)  # after "deuteron"

    def __post_init__(self) -> None:
        words = shlex.split(self.text)
        while words and ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            self.env[name] = value
        assert words[:1] == ["deuteron"], f"{self.where}: not a deuteron command: {self.text}"
        self.words = words[1:]

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def page_commands(page: Path) -> list[Command]:
    """The page's commands in order, with the output each console block shows."""
    name = str(page.relative_to(REPO))
    lines = page.read_text().splitlines()
    commands: list[Command] = []
    lang: str | None = None  # inside a block: its language
    gpu = False
    current: Command | None = None  # the console command whose output is being read
    for number, raw in enumerate(lines, 1):
        fence = FENCE.match(raw)
        if lang is None:
            if fence:
                lang = fence.group(1) or "text"
                before = [line.strip() for line in lines[: number - 1] if line.strip()]
                gpu = bool(before) and before[-1] == GPU_MARK
            continue
        if fence and not fence.group(1):  # the block's end
            lang, current = None, None
            continue
        line = raw.strip()
        if lang == "bash":
            text = line.split("  #", 1)[0].strip()
            if COMMAND.match(text):
                commands.append(Command(name, number, text, gpu))
        elif lang == "console":
            if line.startswith("$ "):
                text = line[2:].split("  #", 1)[0].strip()
                current = None
                if COMMAND.match(text):
                    current = Command(name, number, text, gpu, shown=[])
                    commands.append(current)
            elif current is not None and current.shown is not None:
                current.shown.append(raw)
    return commands


ALL = {str(page.relative_to(REPO)): page_commands(page) for page in PAGES}
CPU_PAGES = [name for name, commands in ALL.items() if any(not c.gpu for c in commands)]
GPU_PAGES = [name for name, commands in ALL.items() if any(c.gpu for c in commands)]


def expected_code(command: Command) -> int:
    text = " ".join(["deuteron", *command.words])
    finds = text.startswith("deuteron check") and "check_me.py" in text and "--fixed" not in text
    return 1 if finds or "report.json" in text else 0


def normalise(line: str) -> str:
    line = TOKEN.sub("/TOKEN/", line)
    line = NUMBER.sub(lambda m: "#.#" if re.search(r"[.eE]", m.group()) else "#", line)
    return " ".join(line.split())


def _segments(shown: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            segments.append([])
        elif line.strip():
            segments[-1].append(normalise(line))
    return [s for s in segments if s]


def _find(segments: list[list[str]], actual: list[str]) -> str | None:
    """None if the segments appear in order in ``actual``, each as consecutive lines; else the
    first shown line that could not be placed."""
    at = 0
    for segment in segments:
        for start in range(at, len(actual) - len(segment) + 1):
            if actual[start : start + len(segment)] == segment:
                at = start + len(segment)
                break
        else:
            placed = [line for line in segment if line in actual[at:]]
            return next((line for line in segment if line not in placed), segment[0])
    return None


def assert_shown(command: Command, stdout: str, stderr: str) -> None:
    if not command.shown:
        return
    segments = _segments(command.shown)
    out = [normalise(line) for line in stdout.splitlines() if line.strip()]
    err = [normalise(line) for line in stderr.splitlines() if line.strip()]
    missing = _find(segments, out + err)
    if missing is not None and _find(segments, err + out) is not None:
        pytest.fail(
            f"{command.where}: `{command.text}` does not print what the page shows.\n"
            f"first shown line not found (normalised): {missing!r}\n"
            f"--- stdout ---\n{stdout[-4000:]}\n--- stderr ---\n{stderr[-4000:]}"
        )


def _expand(words: list[str], folder: Path) -> list[str]:
    out: list[str] = []
    for word in words:
        matches = sorted(glob.glob(word, root_dir=folder)) if any(c in word for c in "*?[") else []
        out.extend(matches or [word])
    return out


def run_page(page: str, gpu: bool, tmp_path: Path) -> None:
    commands = [c for c in ALL[page] if c.gpu == gpu]
    for folder in ("examples", "tests"):
        (tmp_path / folder).symlink_to(REPO / folder)
    for command in commands:
        # The command runs as a user runs it, not as part of this test: `deuteron check` would
        # otherwise name this test as the one that launched each kernel.
        env = {"PYTEST_CURRENT_TEST": "", **command.env}
        if not gpu:
            env["CUDA_VISIBLE_DEVICES"] = ""
        words = _expand(command.words, tmp_path)
        if words[0] == "serve" and not {"--html", "--perfetto"} & set(words):
            stdout, stderr = _serve_once(words[1:], tmp_path, env)
            assert_shown(command, stdout, stderr)
            continue
        proc = run_cli(*words, cwd=tmp_path, env=env, timeout=600)
        assert proc.returncode == expected_code(command), (
            f"{command.where}: `{command.text}` exited with {proc.returncode}",
            proc.stderr[-3000:],
        )
        assert "Traceback" not in proc.stderr and "deuteron: error" not in proc.stderr, (
            f"{command.where}: `{command.text}`",
            proc.stderr[-3000:],
        )
        assert_shown(command, proc.stdout, proc.stderr)


def _serve_once(args: list[str], folder: Path, extra_env: dict[str, str]) -> tuple[str, str]:
    """A server command: it starts, answers its page and its index, and stops. Returns what it
    printed (stdout, stderr)."""
    printed: list[str] = []
    with serving(*args, cwd=folder, env=extra_env, printed=printed) as url:
        with urllib.request.urlopen(url, timeout=60) as reply:
            assert reply.status == 200 and b"<html" in reply.read().lower()
        with urllib.request.urlopen(url + "api/index.json", timeout=60) as reply:
            index = json.loads(reply.read())
        kinds = ("profiles", "traces", "records", "checks", "explains")
        assert any(index.get(k) for k in kinds), (args, index)
    return printed[0], printed[1]


@pytest.mark.parametrize("page", CPU_PAGES)
@pytest.mark.slow
def test_commands_run_as_typed(page: str, tmp_path: Path) -> None:
    run_page(page, gpu=False, tmp_path=tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("page", GPU_PAGES)
def test_gpu_commands_run_as_typed(page: str, tmp_path: Path) -> None:
    try:
        from deuteron.collect.backends.cupti import unavailable_reason

        why = unavailable_reason()
    except ImportError as exc:
        why = f"the CUPTI backend cannot be imported ({exc})"
    if why is not None:
        pytest.skip(f"needs the CUPTI backend: {why}")
    run_page(page, gpu=True, tmp_path=tmp_path)


def test_the_docs_show_every_command() -> None:
    """The collection itself: every command of every page is found, and every page that should
    show commands does."""
    cpu = [c for commands in ALL.values() for c in commands if not c.gpu]
    assert len(cpu) >= 40, [c.text for c in cpu]
    for page in (
        "README.md",
        "docs/profiling.md",
        "docs/torch.md",
        "docs/viewing.md",
        "docs/check.md",
        "docs/explain.md",
        "docs/serve.md",
        "docs/backends.md",
    ):
        assert page in CPU_PAGES, f"{page} shows no command the tests run"
    assert {"docs/jax.md", "docs/native.md", "docs/backends.md"} <= set(GPU_PAGES)
    assert any(c.words[:2] == ["explain", "--profile"] for c in cpu)
    needs_gpu = [c.where for c in cpu if "cupti" in c.words or any("native" in w for w in c.words)]
    assert not needs_gpu, f"these need a GPU: put {GPU_MARK} before their block: {needs_gpu}"
    assert sum(1 for c in cpu if c.shown) >= 10, "the pages show outputs; are the console blocks found?"
    for path in PAGES:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() == GPU_MARK:
                after = FENCE.match(next((x for x in lines[i + 1 :] if x.strip()), ""))
                assert after is not None and after.group(1), (
                    f"{path.name}:{i + 1}: {GPU_MARK} must come right before a code block"
                )


def test_readme_is_short_and_its_links_resolve() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 150, "the README is the front page: the manual is in docs/"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        assert (REPO / path).exists(), f"README links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+\s+(.*)$", (REPO / path).read_text(), flags=re.M)
            assert anchor in {_slug(h) for h in headings}, f"README links to {target}: no such heading"


def _slug(heading: str) -> str:
    """Python-Markdown's default slug, as MkDocs makes the anchors."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_repository_paths_in_the_docs_exist() -> None:
    """A file or folder of this repository named in the docs (`deuteron/...`, `tests/...`, ...)
    exists: a moved file shows here, not in a reader's failed search."""
    missing = []
    # architecture.md is the layout's own map, kept by tests/test_layout.py. The log of past runs,
    # with the paths of their day, is benchmarks/HISTORY.md, which is not a page.
    for page in [p for p in PAGES if p.name != "architecture.md"]:
        for path in re.findall(
            r"`((?:deuteron|tests|benchmarks|scripts|examples|frontend|docs)/[^`\s]*)`", page.read_text()
        ):
            if not glob.glob(str(REPO / path.rstrip("/"))):
                missing.append(f"{page.relative_to(REPO)}: {path}")
    assert not missing, missing


def test_every_page_is_in_the_nav() -> None:
    """Also checked by mkdocs (validation.nav.omitted_files); this one runs without it."""
    nav = set(re.findall(r":\s*([\w-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(), flags=re.M))
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages == nav, (pages - nav, nav - pages)


def test_site_builds_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict`: no warning at all (a broken link or anchor, a page out of the nav)."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("DEUTERON_REQUIRE_DOCS"):
            pytest.fail("DEUTERON_REQUIRE_DOCS is set but mkdocs is not installed: pip install -e '.[dev]'")
        pytest.skip(
            "mkdocs is not installed (pip install -e '.[dev]'); DEUTERON_REQUIRE_DOCS=1 fails instead"
        )
    # NO_MKDOCS_2_WARNING: Material's banner about its own end of life, not a warning of the build.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-5000:]
    assert (tmp_path / "site" / "index.html").is_file()
