"""Every ``deuteron`` command in the README's shell examples runs as typed, in order, from a
fresh folder that has the repository's examples and tests beside it: no error line, no traceback,
the exit code the README says (1 only where it says a finding makes it so)."""

from __future__ import annotations

import json
import re
import shlex
import urllib.request
from pathlib import Path

from tests.conftest import REPO, run_cli


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text().replace("\n  ```", "\n```")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):  # indented blocks too
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()  # the README's comments follow two spaces
            if line.startswith("deuteron "):
                commands.append(line)
    return commands


def test_every_readme_command_runs_as_typed(tmp_path: Path) -> None:
    for folder in ("examples", "tests"):
        (tmp_path / folder).symlink_to(REPO / folder)
    commands = readme_commands()
    assert len(commands) >= 15 and any(c.startswith("deuteron explain --profile") for c in commands)
    for command in commands:
        words = shlex.split(command)[1:]
        if words[0] == "serve" and "--html" not in words:
            _serve_once(words[1:], tmp_path)
            continue
        proc = run_cli(*words, cwd=tmp_path, timeout=600)
        finds = command.startswith("deuteron check") and "check_me.py" in command and "--fixed" not in command
        expected = 1 if finds or "report.json" in command else 0
        assert proc.returncode == expected, (command, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "deuteron: error" not in proc.stderr, (command, proc.stderr)


def _serve_once(args: list[str], folder: Path) -> None:
    """A server command: it starts, answers the page and its index, and stops when asked."""
    from tests.web.conftest import serving

    with serving(*args, cwd=folder) as url, urllib.request.urlopen(url + "api/index.json") as reply:
        index = json.loads(reply.read())
    assert any(index[k] for k in ("profiles", "traces", "records", "checks", "explains")), (args, index)
