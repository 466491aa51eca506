"""The recorded multi-rank jobs under tests/fixtures/ranks, unpacked for a test."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from deuteron.formats import hatchet
from deuteron.model.tree import Profile
from tests.helpers.paths import FIXTURES_DIR

RECORDED = FIXTURES_DIR / "ranks"


def unpacked(job: str, folder: Path, only: str = "") -> Path:
    """The recorded job's files as ``deuteron run`` wrote them (the fixtures are gzipped); with
    ``only`` (a suffix: ``.chrome_trace``), those files alone."""
    out = folder / job
    out.mkdir()
    for packed in (RECORDED / job).glob(f"*{only}.gz"):
        with gzip.open(packed, "rb") as src, open(out / packed.name[: -len(".gz")], "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


def recorded_profiles(job: str) -> list[Profile]:
    """The recorded job's rank profiles in rank order, read in memory (nothing written)."""
    paths = sorted((RECORDED / job).glob("deuteron.rank*.hatchet.gz"))
    return [hatchet.from_json(json.loads(gzip.decompress(p.read_bytes())), str(p)) for p in paths]
