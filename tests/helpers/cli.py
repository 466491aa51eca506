"""Running deuteron in a fresh process, as a user would: ``python -m deuteron ...`` and
``deuteron serve`` with this checkout on the path."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.paths import REPO


def fresh_process_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child deuteron: without the test session's
    TRITON_INTERPRET and DEUTERON_DISABLE (the child decides), with this checkout first on
    PYTHONPATH, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "DEUTERON_DISABLE")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def run_cli(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m deuteron ARGS`` in a fresh process, as a user would run it (``stdin``: what is
    typed at it, say pdb's commands; None leaves this process's stdin to it)."""
    return subprocess.run(
        [sys.executable, "-m", "deuteron", *args],
        cwd=cwd,
        env=fresh_process_env(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def serving(
    *args: str, cwd: Path, env: dict[str, str] | None = None, printed: list[str] | None = None
) -> Iterator[str]:
    """``deuteron serve --no-browser --port 0 ARGS`` in a fresh process; yields its address.
    ``printed``, when given, receives what the server printed once it stops: its first line
    (stdout) and its stderr."""
    # stderr goes to a file: a server that says much can never block on a full pipe.
    with tempfile.TemporaryFile(mode="w+") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deuteron", "serve", "--no-browser", "--port", "0", *args],
            cwd=cwd,
            env=fresh_process_env(env),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        line = ""
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.search(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]{16}/", line)
            if not match:
                proc.kill()
                proc.wait()
                errors.seek(0)
                raise AssertionError(f"deuteron serve did not start: {line!r} {errors.read()[-2000:]}")
            yield match.group(0)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if printed is not None:
                errors.seek(0)
                printed.extend([line, errors.read()])


def free_port() -> int:
    """A TCP port free on this host a moment ago (for torchrun's rendezvous): the kernel picks
    it, so parallel tests do not share one."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
