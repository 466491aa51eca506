"""Where the repository's test inputs are: examples, recorded fixtures, Proton's own files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES_DIR = REPO / "tests" / "fixtures"  # recorded device buffers, Proton's files, hand-made inputs
PROTON_FIXTURES = FIXTURES_DIR / "proton"  # written by Proton itself; see its README
