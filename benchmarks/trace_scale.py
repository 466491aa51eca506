"""Reading traces of gigabytes: time and peak memory against the file's size.

Synthetic traces are built from the real ones under ``tests/fixtures/ranks/ddp`` (two ranks of a
DDP job recorded on two H100s): the recorded events repeated, each copy moved later by the
recording's length, until the file reaches the size asked for. Each copy keeps the recording's
names, lanes, call stacks, args and launch arrows, so a synthetic trace reads like a longer run of
the same job. Nothing large is kept in the repository: tests and this script write them under a
temporary folder.

Each size is read in a fresh child process (``deuteron.formats.chrome_trace.read_columns``, the
reader every command goes through), which reports its time and its peak resident memory
(``VmHWM``); the interpreter and NumPy alone take about 26 MB of it.

    python benchmarks/trace_scale.py                       # 50 MB and 500 MB
    python benchmarks/trace_scale.py --mb 30 300 3000      # any sizes
    python benchmarks/trace_scale.py --ranks 64 --mb 2000  # 64 ranks' traces, 2 GB in all, read one by one
    python benchmarks/trace_scale.py --ranks 64 --mb 200 --serve   # deuteron serve's level of detail

``--serve`` measures ``deuteron serve`` of the ranks' traces with level of detail instead, each step
in a fresh process with a cache folder of its own: the cold build (the traces read in parallel,
joined, kept in a DuckDB store), the warm open (the store found: ``WebData.add_files``, the index
and the overview, no JSON read), the overview (the whole span at 4096 pixels, as the page first
asks) and windows zoomed to 1% and 0.01% of the span at 2000 pixels.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "fixtures" / "ranks" / "ddp"


def _recorded(rank: int) -> dict[str, Any]:
    with gzip.open(RECORDED / f"deuteron.rank{rank % 2}.chrome_trace.gz", "rb") as f:
        return json.loads(f.read())


def synthetic_trace(out: Path, size: int, rank: int = 0, world: int = 2) -> int:
    """Write a trace of about ``size`` bytes for ``rank`` of a job of ``world`` ranks (ranks past
    the two recorded ones copy rank 0's or 1's events); returns the number of events written."""
    doc = _recorded(rank)
    events = doc["traceEvents"]
    names = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    span = max(e["ts"] + e.get("dur", 0.0) for e in timed) + 1000.0  # µs between copies
    other = dict(doc.get("otherData", {}), rank=str(rank), world_size=str(world))
    other["pid"] = int(other.get("pid", 0)) + rank
    head = {k: v for k, v in doc.items() if k not in ("traceEvents", "otherData")}
    count = len(names)
    with open(out, "wb") as f:
        f.write(orjson.dumps({**head, "otherData": other})[:-1] + b',"traceEvents":[')
        f.write(b",".join(orjson.dumps(e) for e in names))
        written, copy = f.tell(), 0
        while written < size:
            shift = copy * span
            rows = []
            for e in timed:
                moved = dict(e, ts=round(e["ts"] + shift, 3))
                if "id" in moved:
                    moved["id"] = moved["id"] + copy * 10_000_000
                rows.append(orjson.dumps(moved))
            chunk = b"," + b",".join(rows)
            f.write(chunk)
            written += len(chunk)
            count += len(rows)
            copy += 1
        f.write(b"]}")
    return count


_CHILD = """
import sys, time
from deuteron.formats.chrome_trace import read_columns
t = time.perf_counter()
c = read_columns(sys.argv[1])
took = time.perf_counter() - t
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
print(len(c.start), took, peak, len(c.notes))
"""


def measure(path: Path) -> tuple[int, float, int]:
    """(events, seconds, peak bytes) of reading ``path`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    events, took, peak, _ = done.stdout.split()
    return int(events), float(took), int(peak)


_SERVE_CHILD = """
import json, os, sys, time
from deuteron.render.web.data import WebData
from deuteron.render.web.trace_window import window
t = time.perf_counter()
data = WebData()
lines = [line for _, line in data.add_files(sys.argv[1:], lod=True)]
added = time.perf_counter() - t
ref = data.index()["traces"][0]
indexed = time.perf_counter() - t
t1 = time.perf_counter()
overview = data.answer(ref["events"])[1]
out = {"add": added, "index": indexed, "overview_s": time.perf_counter() - t1}
out["overview_bytes"] = len(overview)
store = data.windows[0].store
span = ref["end_ns"] - ref["start_ns"]
for share in (0.01, 0.0001):
    t0 = span * 0.5
    t1 = time.perf_counter()
    body = window(store, t0, t0 + span * share, 2000)
    out[f"zoom{share}"] = (time.perf_counter() - t1, len(body))
out["events"] = ref["count"]
out["store_bytes"] = os.path.getsize(ref["lod"]["store"])
out["peak"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
out["lines"] = lines
print(json.dumps(out))
"""


def serve(paths: list[Path], cache: Path) -> dict[str, Any]:
    """``deuteron serve``'s level of detail over ``paths`` in a fresh process (see the module)."""
    env = dict(os.environ, DEUTERON_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_CHILD, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def measure_serve(paths: list[Path], cache: Path) -> None:
    """The cold build, then the warm open with its overview and zoomed windows (see the module)."""
    total = sum(os.path.getsize(p) for p in paths)
    cold = serve(paths, cache)
    warm = serve(paths, cache)
    assert any("opened from the cache" in line for line in warm["lines"]), warm["lines"]
    print(f"{total / 1e6:.0f} MB in {len(paths)} traces, {cold['events']:,} events")
    print(f"  cold build (read, join, store):  {cold['add']:7.2f} s, peak {cold['peak'] / 1e6:.0f} MB")
    print(f"  store:                           {cold['store_bytes'] / 1e6:7.1f} MB")
    print(f"  warm open (add_files + index):   {warm['index']:7.2f} s")
    size = warm["overview_bytes"] / 1e6
    print(f"  overview (4096 px):              {warm['overview_s']:7.2f} s, {size:.2f} MB")
    print(f"  warm open + overview:            {warm['index'] + warm['overview_s']:7.2f} s")
    for share in ("0.01", "0.0001"):
        took, size = warm[f"zoom{share}"]
        print(f"  window of {float(share):.2%} (2000 px):    {took:7.3f} s, {size / 1e6:.3f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, nargs="+", default=[50, 500], help="sizes in MB (10^6 bytes)")
    parser.add_argument("--ranks", type=int, default=1, help="split each size over this many ranks' traces")
    parser.add_argument(
        "--serve", action="store_true", help="measure deuteron serve's level of detail (see above)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.serve:
            print(f"{'size MB':>8} {'ranks':>5} {'events':>10} {'read s':>7} {'MB/s':>6} {'peak MB':>8}")
        for mb in args.mb:
            size = int(mb * 1e6)
            paths = []
            for rank in range(args.ranks):
                path = Path(tmp) / f"synthetic.rank{rank}.chrome_trace"
                synthetic_trace(path, size // args.ranks, rank, max(args.ranks, 2))
                paths.append(path)
            if args.serve:
                measure_serve(paths, Path(tmp) / f"cache{mb:g}")
                for path in paths:
                    path.unlink()
                continue
            total = sum(os.path.getsize(p) for p in paths)
            events, took, peak = 0, 0.0, 0
            for path in paths:
                n, t, p = measure(path)
                events, took, peak = events + n, took + t, max(peak, p)
            rate = total / 1e6 / took if took else 0.0
            print(
                f"{total / 1e6:8.0f} {args.ranks:5d} {events:10,d} {took:7.2f} {rate:6.0f} {peak / 1e6:8.0f}"
            )
            for path in paths:
                path.unlink()


if __name__ == "__main__":
    main()
