"""Cut recorded rank traces down to their last collectives, for the fixtures CI replays
(``tests/fixtures/ranks_*``): the same window of the shared clock on every rank, so the ranks'
traces still line up as recorded.

    python scripts/trim_rank_traces.py --ms 60 OUT_DIR deuteron.rank0.chrome_trace deuteron.rank1.chrome_trace

The window ends 1 ms after the last NCCL/RCCL kernel of any rank and reaches ``--ms`` back.
Complete events that start in it are kept, with the flow arrows whose both ends are kept and every
metadata event; ``ts`` are moved so the earliest kept event is at 0, and ``otherData.zero_ns``
with them. Written gzipped (``NAME.gz``). Only traces of ours (with ``otherData.zero_ns``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

COMM = re.compile(r"nccl|rccl", re.IGNORECASE)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ms", type=float, default=40.0)
    p.add_argument("out", type=Path)
    p.add_argument("traces", nargs="+", type=Path)
    args = p.parse_args()
    docs = [json.loads(t.read_text()) for t in args.traces]
    end = 0.0
    for d in docs:
        zero = d["otherData"]["zero_ns"]
        for e in d["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") == "kernel" and COMM.search(e["name"]):
                end = max(end, zero + (e["ts"] + e["dur"]) * 1e3)
    end += 1e6
    begin = end - args.ms * 1e6
    args.out.mkdir(parents=True, exist_ok=True)
    for path, d in zip(args.traces, docs, strict=True):
        zero = d["otherData"]["zero_ns"]
        lo, hi = (begin - zero) / 1e3, (end - zero) / 1e3  # in this trace's us

        def inside(e: dict, lo: float = lo, hi: float = hi) -> bool:
            return lo <= e["ts"] <= hi

        flows: dict[object, list[dict]] = {}
        for e in d["traceEvents"]:
            if e.get("ph") in ("s", "f"):
                flows.setdefault((e.get("cat"), e.get("id")), []).append(e)
        kept_flows = {k for k, ends in flows.items() if len(ends) == 2 and all(inside(e) for e in ends)}
        kept = [
            e
            for e in d["traceEvents"]
            if e.get("ph") == "M"
            or (e.get("ph") == "X" and inside(e))
            or (e.get("ph") in ("s", "f") and (e.get("cat"), e.get("id")) in kept_flows)
        ]
        first = min(e["ts"] for e in kept if "ts" in e)
        for e in kept:
            if "ts" in e:
                e["ts"] = round(e["ts"] - first, 3)
        d["traceEvents"] = kept
        d["otherData"]["zero_ns"] = int(zero + first * 1e3)
        text = json.dumps(d, separators=(",", ":"))
        with gzip.open(args.out / (path.name + ".gz"), "wt") as f:
            f.write(text)
        print(f"{path.name}: {len(kept):,} events kept, {len(text) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
