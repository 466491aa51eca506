"""Git commits of a local repository as versions: those on the bad commit's first-parent
history after the good one, each checked out, when it is first run, into a worktree of its own
under a temporary folder (``git worktree add --detach``: the user's checkout, its branch and its
index are never touched), all removed at the end.

The script runs from the worktree (the same path relative to the repository's root): when the
commit does not have it (a reproducer not committed), it is copied there first, with the files
beside it that share its name (``repro.npz``); a script outside the repository runs as given.
Either way the worktree's root is first on ``PYTHONPATH``, so the commit's own modules are the
ones imported, and the script runs in the folder matching the user's working folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from deuteron.bisect.errors import BisectError
from deuteron.bisect.versions import Place, Version


def git(repo: str, *args: str) -> str:
    """``git -C repo ARGS``'s output, stripped; BisectError with git's own first line on failure."""
    try:
        done = subprocess.run(
            ["git", "-C", repo, *args], capture_output=True, text=True, timeout=120, check=False
        )
    except FileNotFoundError:
        raise BisectError("bisecting commits needs git, and there is no git on PATH") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["failed"])[0]
        raise BisectError(f"git {' '.join(args[:2])} in {repo}: {first}")
    return done.stdout.strip()


def find_repository(repo: str | None, script: str) -> str:
    """The root of ``repo`` (``--repo``), else of the repository holding ``script``."""
    where = repo if repo is not None else os.path.dirname(os.path.abspath(script))
    if not os.path.isdir(where):
        raise BisectError(f"--repo {repo}: no such folder")
    done = subprocess.run(
        ["git", "-C", where, "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        if repo is not None:
            raise BisectError(f"--repo {repo}: not a git repository")
        raise BisectError(f"{script} is in no git repository: give the repository with --repo DIR")
    return done.stdout.strip()


def _commit(root: str, ref: str, option: str) -> str:
    done = subprocess.run(
        ["git", "-C", root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise BisectError(f"{option} {ref}: no such commit in {root}")
    return done.stdout.strip()


def _copy_beside(script: str, into: str) -> None:
    """An uncommitted script of the repository, copied to its place in a worktree with the files
    beside it that share its name (a reproducer's ``.npz``), so it imports the commit's modules
    (Python puts a script's own folder first on ``sys.path``) and finds its values."""
    os.makedirs(os.path.dirname(into), exist_ok=True)
    stem = os.path.splitext(os.path.basename(script))[0]
    folder = os.path.dirname(script)
    for name in os.listdir(folder):
        if os.path.splitext(name)[0] == stem and os.path.isfile(os.path.join(folder, name)):
            shutil.copy2(os.path.join(folder, name), os.path.join(os.path.dirname(into), name))


class Commits:
    """The commits from good to bad along bad's first parents, checked out on demand."""

    what = "commit"

    def __init__(self, repo: str | None, script: str, good: str, bad: str) -> None:
        self.root = find_repository(repo, script)
        self.script = os.path.abspath(script)
        good_sha, bad_sha = _commit(self.root, good, "--good"), _commit(self.root, bad, "--bad")
        if good_sha == bad_sha:
            raise BisectError(f"--good {good} and --bad {bad} are the same commit ({good_sha[:10]})")
        listed = git(
            self.root,
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H%x00%h%x00%s",
            f"{good_sha}..{bad_sha}",
        )
        rows = [line.split("\0", 2) for line in listed.splitlines() if line]
        first_parent = (
            git(self.root, "rev-parse", f"{rows[0][0]}^1") if rows and rows[0][0] != good_sha else ""
        )
        if not rows or first_parent != good_sha:
            raise BisectError(
                f"--good {good} is not on the first-parent history of --bad {bad} "
                f"(see git log --first-parent {bad}): give a good commit that {bad} comes after"
            )
        head = git(self.root, "log", "-1", "--format=%H%x00%h%x00%s", good_sha).split("\0", 2)
        self.versions = [Version(short, sha, title) for sha, short, title in [head, *rows]]
        self.folder = tempfile.mkdtemp(prefix="deuteron-bisect-")
        self.trees: dict[str, str] = {}

    def place(self, version: Version) -> Place:
        tree = self.trees.get(version.key)
        if tree is None:
            tree = os.path.join(self.folder, version.ref)
            git(self.root, "worktree", "add", "--detach", "--quiet", tree, version.key)
            self.trees[version.key] = tree
        script = self.script
        inside = os.path.relpath(self.script, self.root)
        if not inside.startswith(os.pardir):
            script = os.path.join(tree, inside)
            if not os.path.isfile(script):
                _copy_beside(self.script, script)
        cwd = os.getcwd()
        here = os.path.relpath(cwd, self.root)
        if not here.startswith(os.pardir) and os.path.isdir(os.path.join(tree, here)):
            cwd = os.path.normpath(os.path.join(tree, here))
        return Place(cwd, script, [tree])

    def close(self) -> None:
        """Removes every worktree made, and the temporary folder."""
        for tree in self.trees.values():
            subprocess.run(
                ["git", "-C", self.root, "worktree", "remove", "--force", tree],
                capture_output=True,
                check=False,
            )
        self.trees.clear()
        subprocess.run(["git", "-C", self.root, "worktree", "prune"], capture_output=True, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
