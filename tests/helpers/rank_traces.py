"""The recorded multi-rank jobs under tests/fixtures/ranks, unpacked for a test."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from tests.helpers.paths import FIXTURES_DIR

RECORDED = FIXTURES_DIR / "ranks"


def unpacked(job: str, folder: Path) -> Path:
    """The recorded job's files as ``deuteron run`` wrote them (the fixtures are gzipped)."""
    out = folder / job
    out.mkdir()
    for packed in (RECORDED / job).glob("*.gz"):
        with gzip.open(packed, "rb") as src, open(out / packed.name[: -len(".gz")], "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out
