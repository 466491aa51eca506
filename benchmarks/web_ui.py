"""The web UI's speed on large inputs, in headless Chromium on this machine (issue 15's targets):

- first paint of a 100 000-node profile < 2 s; its ``--html`` file < 10 MB
- a 1 000 000-event trace opens < 3 s
- an access view of a 4096×4096 tensor with 4096 programs: < 1 s per launch switch

The inputs are synthetic but written and read by the real formats; every number comes from the
real ``deuteron serve`` process (or ``--html`` file) in the browser. Usage:

    python benchmarks/web_ui.py [--rounds 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from deuteron.formats import access_record, hatchet  # noqa: E402
from deuteron.model.tree import Node, Profile  # noqa: E402
from tests.helpers.browser import CHROMIUM_ARGS, chromium_path  # noqa: E402


def make_profile(path: Path, nodes: int = 100_000) -> None:
    rng = random.Random(1)
    root = Node("ROOT")
    frontier = [root]
    made = 1
    while made < nodes:
        parent = frontier[rng.randrange(len(frontier))]
        child = parent.child(
            f"frame_{made}_{rng.choice(['attn', 'mlp', 'norm', 'matmul_kernel'])}", "function"
        )
        child.metrics = {
            "time (ns)": rng.uniform(1e3, 1e6),
            "count": rng.randint(1, 50),
            "flops": rng.uniform(1e6, 1e9),
            "bytes": rng.uniform(1e5, 1e8),
        }
        frontier.append(child)
        made += 1
    hatchet.write(Profile(root=root, metadata={"command": "synthetic 100k-node profile"}), path)


def make_trace(path: Path, events: int = 1_000_000) -> None:
    rng = np.random.default_rng(2)
    half = events // 2
    out = [
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": t, "args": {"name": n}}
        for t, n in ((1, "main thread"), (2, "loader"), (100, "GPU stream 7"), (101, "GPU stream 8"))
    ]
    starts = np.cumsum(rng.uniform(0.5, 3.0, half))
    durs = rng.uniform(0.2, 2.0, half)
    for i in range(half):
        tid = 1 if i % 4 else 2
        out.append(
            {
                "name": f"op_{i % 97}",
                "cat": "scope",
                "ph": "X",
                "ts": float(starts[i]),
                "dur": float(durs[i]) * 0.4,
                "pid": 0,
                "tid": tid,
            }
        )
        k = {
            "name": f"kernel_{i % 53}",
            "cat": "kernel",
            "ph": "X",
            "ts": float(starts[i]) + 1.0,
            "dur": float(durs[i]),
            "pid": 0,
            "tid": 100 + i % 2,
        }
        out.append(k)
        if i % 20 == 0:
            out.append(
                {
                    "name": "launch",
                    "cat": "launch",
                    "ph": "s",
                    "id": i,
                    "ts": float(starts[i]),
                    "pid": 0,
                    "tid": tid,
                }
            )
            out.append(
                {
                    "name": "launch",
                    "cat": "launch",
                    "ph": "f",
                    "bp": "e",
                    "id": i,
                    "ts": k["ts"],
                    "pid": 0,
                    "tid": k["tid"],
                }
            )
    path.write_bytes(orjson.dumps({"traceEvents": out}))


def make_record(path: Path, launches: int = 2, n: int = 4096, tile: int = 64) -> None:
    tiles = n // tile
    r, c = np.meshgrid(np.arange(tile), np.arange(tile), indexing="ij")
    block = (r * n + c).ravel().astype(np.int64) * 4
    header: dict = {
        "lanes": 0,
        "dropped_lanes": 0,
        "limit": 1 << 40,
        "sites": [{"file": "tiles.py", "line": 7, "function": "tile"}],
        "launches": [],
    }
    rows, chunks, lanes = [], [], 0
    for launch in range(launches):
        programs = []
        for p in range(tiles * tiles):
            pr, pc = divmod(p, tiles)
            programs.append([pr, pc, 0])
            chunks.append(block + (pr * tile * n + pc * tile) * 4)
            rows.append((launch, p, launch % 2, 0, 0, lanes, tile * tile))
            lanes += tile * tile
        header["launches"].append(
            {
                "index": launch,
                "kernel": f"tile_{launch}",
                "file": "tiles.py",
                "grid": [tiles, tiles, 1],
                "tensors": [
                    {
                        "name": "x",
                        "shape": [n, n],
                        "strides": [n, 1],
                        "dtype": "float32",
                        "element_size": 4,
                        "storage": 0,
                        "offset": 0,
                    }
                ],
                "storages": [{"nbytes": n * n * 4, "granule": 4}],
                "programs": programs,
            }
        )
    header["lanes"] = lanes
    access_record.write(header, np.array(rows, dtype=access_record.ROW), np.concatenate(chunks), path)


def serve(*files: Path) -> tuple[subprocess.Popen[str], str, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deuteron", "serve", "--no-browser", "--port", "0", *map(str, files)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        raise SystemExit(f"serve failed: {line} {proc.stderr.read() if proc.stderr else ''}")
    return proc, line.split()[2], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", help="write the inputs here (default: a temporary folder)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(args.keep or tempfile.mkdtemp(prefix="deuteron-web-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    inputs = {
        "profile": folder / "big.hatchet",
        "trace": folder / "big.chrome_trace",
        "record": folder / "big.npz",
    }
    makers = {"profile": make_profile, "trace": make_trace, "record": make_record}
    for kind, path in inputs.items():
        if not path.exists():
            t = time.perf_counter()
            makers[kind](path)
            print(
                f"made {path.name}: {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s",
                flush=True,
            )
    results: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        results.setdefault(key, []).append(value)

    html = folder / "big_profile.html"
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "deuteron", "serve", "--html", str(html), str(inputs["profile"])],
        check=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
    )
    took = time.perf_counter() - t
    print(f"--html of the 100k-node profile: {html.stat().st_size / 1e6:.2f} MB in {took:.1f} s")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for _ in range(args.rounds):
            for kind in ("profile", "trace"):
                proc, url, startup = serve(inputs[kind])
                note(f"{kind}: serve start (read + index)", startup)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                selector = (
                    "canvas.flame-canvas[data-drawn]" if kind == "profile" else "canvas.tl-canvas[data-drawn]"
                )
                t = time.perf_counter()
                page.goto(url + ("#profile" if kind == "profile" else "#timeline"))
                page.wait_for_selector(selector, timeout=60_000)
                note(f"{kind}: page open to first paint (served)", time.perf_counter() - t)
                if kind == "trace":
                    frame = float(page.locator("canvas.tl-canvas").get_attribute("data-frame-ms") or "nan")
                    note("trace: one frame at 1M events (ms)", frame)
                page.close()
                proc.terminate()
                proc.wait()
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            t = time.perf_counter()
            page.goto(html.as_uri() + "#profile")
            page.wait_for_selector("canvas.flame-canvas[data-drawn]", timeout=60_000)
            note("profile: --html file open to first paint", time.perf_counter() - t)
            page.close()
            proc, url, startup = serve(inputs["record"])
            note("record: serve start (read + index)", startup)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            t = time.perf_counter()
            page.goto(url + "#accesses")
            page.wait_for_selector("#view-accesses[data-state=ready][data-launch='0']", timeout=120_000)
            note(
                "record: first launch shown (cold: includes the server's reduction)", time.perf_counter() - t
            )
            for target in (1, 0, 1, 0):
                t = time.perf_counter()
                page.select_option("select[name=launch]", str(target))
                page.wait_for_selector(
                    f"#view-accesses[data-state=ready][data-launch='{target}']", timeout=120_000
                )
                note("record: launch switch, 4096² tensor, 4096 programs", time.perf_counter() - t)
            page.close()
            proc.terminate()
            proc.wait()
        browser.close()
    print("\n| measure | median | min | max | n |\n|---|---|---|---|---|")
    for key, values in results.items():
        unit = "" if "(ms)" in key else " s"
        mid, low, high = statistics.median(values), min(values), max(values)
        print(f"| {key} | {mid:.2f}{unit} | {low:.2f}{unit} | {high:.2f}{unit} | {len(values)} |")


if __name__ == "__main__":
    main()
