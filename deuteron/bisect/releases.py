"""Triton releases as versions: ``--good triton==3.6.0 --bad triton==3.9.0``.

The candidates are the releases published on PyPI between the two (final releases with a wheel
for this Python and machine; ``--triton-versions`` names them instead, offline). Each is
installed once, when first run, with ``pip install --no-deps --target`` into a cached folder
(``$DEUTERON_CACHE_DIR/bisect``, else ``~/.cache/deuteron/bisect``), and runs with that folder
first on ``PYTHONPATH``; the Triton installed here runs as it is, and ``--triton-folder
VERSION=DIR`` names a folder that already holds a version (nothing is downloaded for it).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from importlib import metadata

from deuteron.bisect.errors import BisectError
from deuteron.bisect.search import steps_left
from deuteron.bisect.versions import Place, Version

PREFIX = "triton=="
INDEX_URL = "https://pypi.org/pypi/triton/json"
INDEX_ENV = "DEUTERON_BISECT_INDEX"  # another address of the same JSON (a mirror, a file)
_FINAL = re.compile(r"^\d+(\.\d+)*$")


def is_release(ref: str) -> bool:
    return ref.strip().startswith(PREFIX)


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def cache_dir() -> str:
    """Where the releases are installed: ``$DEUTERON_CACHE_DIR/bisect``, else the user's cache."""
    root = os.environ.get("DEUTERON_CACHE_DIR")
    if root:
        return os.path.join(root, "bisect")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "deuteron", "bisect")


def installed_version() -> str | None:
    """The Triton this Python imports without help, read from its metadata (not imported)."""
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def _wheel_fits(filename: str) -> bool:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return filename.endswith(".whl") and f"-{tag}-" in filename and platform.machine() in filename


def published() -> dict[str, int | None]:
    """Triton's final releases with a wheel for this Python and machine, and each wheel's size in
    bytes: from PyPI's JSON API, else ``pip index versions`` (no sizes)."""
    try:
        with urllib.request.urlopen(os.environ.get(INDEX_ENV) or INDEX_URL, timeout=30) as answer:
            releases = json.load(answer)["releases"]
        out: dict[str, int | None] = {}
        for version, files in releases.items():
            sizes = [
                f.get("size") for f in files if _wheel_fits(f.get("filename", "")) and not f.get("yanked")
            ]
            if _FINAL.match(version) and sizes:
                out[version] = int(sizes[0]) if sizes[0] else None
        return out
    except (OSError, ValueError, KeyError) as exc:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", "triton"],
            capture_output=True,
            text=True,
            check=False,
        )
        found = re.search(r"Available versions:\s*(.*)", listed.stdout)
        if listed.returncode != 0 or not found:
            raise BisectError(
                f"cannot list Triton's releases ({exc}; pip index versions failed too): "
                "name them with --triton-versions 3.6.0,3.7.0,..."
            ) from None
        return {v.strip(): None for v in found.group(1).split(",") if _FINAL.match(v.strip())}


def _parse(ref: str, option: str) -> str:
    text = ref.strip()[len(PREFIX) :].strip()
    if not _FINAL.match(text):
        raise BisectError(f"{option} {ref}: write a release as triton==3.6.0")
    return text


def _size(size: int | None) -> str:
    return f"{size / 1e6:.0f} MB" if size else "size unknown"


class Releases:
    """Triton's releases from good to bad, each installed into the cache when first run."""

    what = "Triton release"

    def __init__(
        self,
        script: str,
        good: str,
        bad: str,
        chosen: list[str] | None = None,
        folders: dict[str, str] | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        if not is_release(good) or not is_release(bad):
            raise BisectError(
                f"--good {good} --bad {bad}: give two Triton releases (triton==X) or two commits"
            )
        good_v, bad_v = _parse(good, "--good"), _parse(bad, "--bad")
        if version_key(good_v) == version_key(bad_v):
            raise BisectError(f"--good {good} and --bad {bad} are the same release")
        self.script = os.path.abspath(script)
        self.say = say
        self.installed = installed_version()
        self.folders = dict(folders or {})
        for version, folder in self.folders.items():
            if not os.path.isdir(os.path.join(folder, "triton")):
                raise BisectError(f"--triton-folder {version}={folder}: no triton package in that folder")
        self.sizes: dict[str, int | None] = {}
        if chosen is not None:
            names = {v for v in chosen if _FINAL.match(v)} | {good_v, bad_v}
            bad_names = [v for v in chosen if not _FINAL.match(v)]
            if bad_names:
                raise BisectError(f"--triton-versions: {bad_names[0]!r} is not a release such as 3.6.0")
        else:
            self.sizes = published()
            for option, v in (("--good", good_v), ("--bad", bad_v)):
                if v not in self.sizes:
                    near = ", ".join(sorted(self.sizes, key=version_key)[-6:])
                    raise BisectError(
                        f"{option} triton=={v}: no such release on PyPI for this machine (latest: {near})"
                    )
            names = set(self.sizes)
        low, high = sorted((good_v, bad_v), key=version_key)
        between = sorted(
            (v for v in names if version_key(low) <= version_key(v) <= version_key(high)), key=version_key
        )
        if version_key(good_v) > version_key(bad_v):
            between.reverse()  # looking for the release that fixed something
        self.versions = [Version(f"{PREFIX}{v}", v) for v in between]
        self.root = cache_dir()
        self._announce()

    def folder(self, version: str) -> str | None:
        """The folder holding ``version`` (None: the Triton this Python imports itself)."""
        if version in self.folders:
            return self.folders[version]
        if version == self.installed:
            return None
        return os.path.join(self.root, f"triton-{version}")

    def _missing(self) -> list[str]:
        out = []
        for v in self.versions:
            folder = self.folder(v.key)
            if folder is not None and not os.path.isdir(folder):
                out.append(v.key)
        return out

    def _announce(self) -> None:
        missing = self._missing()
        if not missing:
            return
        total = sum(self.sizes.get(v) or 0 for v in missing)
        sized = f", {total / 1e6:.0f} MB in all" if total else ""
        self.say(
            f"{len(missing)} of the {len(self.versions)} releases are not downloaded yet "
            f"({', '.join(missing)}{sized}); the search downloads those it runs (about "
            f"{min(len(missing), steps_left(0, len(self.versions) - 1) + 2)}), each once, into {self.root}"
        )

    def _install(self, version: str, folder: str) -> None:
        os.makedirs(self.root, exist_ok=True)
        self.say(f"downloading triton=={version} ({_size(self.sizes.get(version))}) into {folder}")
        temporary = tempfile.mkdtemp(prefix=f".triton-{version}-", dir=self.root)
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "--no-deps",
                    "--disable-pip-version-check",
                    "--progress-bar",
                    "on",
                    "--target",
                    temporary,
                    f"triton=={version}",
                ],
                stdout=sys.stderr,  # pip's progress on the terminal, beside ours
                check=False,
            )
            if done.returncode != 0:
                raise BisectError(
                    f"pip could not install triton=={version} (exit {done.returncode}; its output is above)"
                )
            os.replace(temporary, folder)
        finally:
            shutil.rmtree(temporary, ignore_errors=True)

    def place(self, version: Version) -> Place:
        folder = self.folder(version.key)
        if folder is not None and not os.path.isdir(folder):
            self._install(version.key, folder)
        return Place(os.getcwd(), self.script, [folder] if folder else [])

    def close(self) -> None:
        """Nothing to remove: the releases stay in the cache for the next bisection."""
