"""The recorded multi-rank jobs under tests/fixtures/ranks, unpacked for a test, and jobs of many
ranks scaled from them."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path
from typing import Any

import orjson

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


def scaled_job(folder: Path, ranks: int, total_bytes: int, job: str = "ddp", seed: int = 7) -> list[Path]:
    """A job of ``ranks`` ranks' traces of about ``total_bytes`` in all, written into ``folder``
    (``scaled.rank{r}.chrome_trace``), made from the recorded job's two ranks as
    ``benchmarks/trace_scale.py`` makes its synthetic traces: rank r is recorded rank r % 2, its
    events in time order, repeated one recording's length (plus 1 ms) later as often as the size
    asks and cut at the size (an arrow whose other end the cut left out goes whole). Each rank says
    its rank, the world size and its local rank, and its clock's zero moves by up to 0.3 ms, so the
    ranks join on one host's clock as a real job's do."""
    recorded = []
    for r in (0, 1):
        with gzip.open(RECORDED / job / f"deuteron.rank{r}.chrome_trace.gz", "rb") as f:
            recorded.append(orjson.loads(f.read()))
    rng = random.Random(seed)
    per_rank = max(1, total_bytes // ranks)
    out = []
    for rank in range(ranks):
        doc = recorded[rank % 2]
        names = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
        timed = sorted((e for e in doc["traceEvents"] if e.get("ph") != "M"), key=lambda e: e["ts"])
        span = max(e["ts"] + e.get("dur", 0.0) for e in timed) + 1000.0  # µs between copies
        info = dict(doc.get("otherData", {}), rank=str(rank), world_size=str(ranks), local_rank=str(rank % 8))
        info["zero_ns"] = int(info.get("zero_ns", 0)) + rng.randrange(0, 300_000)
        head = {k: v for k, v in doc.items() if k not in ("traceEvents", "otherData")}
        rows: list[tuple[dict[str, Any], bytes]] = []
        written, copy = 0, 0
        while written < per_rank:
            for e in timed:
                moved = dict(e, ts=round(e["ts"] + copy * span, 3))
                if "id" in moved:
                    moved["id"] = moved["id"] + copy * 10_000_000
                row = orjson.dumps(moved)
                rows.append((moved, row))
                written += len(row) + 1
                if written >= per_rank:
                    break
            copy += 1
        ends: dict[tuple[Any, Any], set[str]] = {}
        for e, _ in rows:
            if e.get("ph") in ("s", "f", "t"):
                ends.setdefault((e.get("cat"), e["id"]), set()).add("s" if e["ph"] == "s" else "f")
        whole = {key for key, seen in ends.items() if len(seen) == 2}
        kept = [
            row for e, row in rows if e.get("ph") not in ("s", "f", "t") or (e.get("cat"), e["id"]) in whole
        ]
        path = folder / f"scaled.rank{rank}.chrome_trace"
        with open(path, "wb") as f:
            f.write(orjson.dumps({**head, "otherData": info})[:-1] + b',"traceEvents":[')
            f.write(b",".join([orjson.dumps(e) for e in names] + kept))
            f.write(b"]}")
        out.append(path)
    return out
