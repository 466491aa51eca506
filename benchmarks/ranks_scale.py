"""How `deuteron view NAME.rank*.hatchet --advise` grows with the ranks of a job (issue 30's target:
1,024 ranks in under 10 s, the straggler named).

The rank files are made from a real one: the `-c torch` training step recorded on an H100
(tests/fixtures/cupti_torch, replayed), each rank's kernel times perturbed by up to ±5%, one rank
(the straggler) 1.6× slower in `layers.1`, and an NCCL all-reduce kernel added to every rank's
backward whose time is what a rank waits for the slowest (plus a fixed 1 ms of transfer), as a
collective's kernel does. Usage:

    python benchmarks/ranks_scale.py [--ranks 64,256,1024] [--keep DIR]
"""

from __future__ import annotations

import argparse
import copy
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from deuteron.collect.backends.cupti import replay  # noqa: E402
from deuteron.collect.session import Session  # noqa: E402
from deuteron.formats import hatchet  # noqa: E402
from deuteron.model.metrics import TIME  # noqa: E402
from deuteron.model.tree import KERNEL, Node, Profile  # noqa: E402

NCCL = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"


def _recorded() -> Profile:
    session = Session(0, "fixture", backend="interpreter", context="torch")
    replay(REPO / "tests" / "fixtures" / "cupti_torch", session)
    return session.profile


def _scale(node: Node, factor: float, rng: random.Random | None) -> None:
    for n in node.walk():
        t = n.metrics.get(TIME)
        if n.type == KERNEL and isinstance(t, (int, float)):
            n.metrics[TIME] = int(t * factor * (1 + rng.uniform(-0.05, 0.05) if rng else 1))


def _compute(p: Profile) -> int:
    return sum(int(n.metrics.get(TIME, 0)) for n in p.root.walk() if n.type == KERNEL)  # type: ignore[arg-type]


def make_job(folder: Path, ranks: int, straggler: int) -> list[str]:
    real = _recorded()
    rng = random.Random(ranks)
    profiles = []
    for r in range(ranks):
        p = copy.deepcopy(real)
        _scale(p.root, 1.0, rng)
        if r == straggler:
            step = p.root.children[("step", "function")]
            model = step.children[("Model", "function")]
            encoder = next(c for c in model.children.values() if c.name.startswith("encoder"))
            layer = next(c for c in encoder.children.values() if c.name.startswith("layers.1"))
            _scale(layer, 1.6, None)
        profiles.append(p)
    slowest = max(_compute(p) for p in profiles)
    names = []
    for r, p in enumerate(profiles):
        step = p.root.children[("step", "function")]
        hook = step.child("backward").child("AccumulateGrad").child("nccl:all_reduce")
        p.add_metrics(hook.child(NCCL, KERNEL), {TIME: slowest - _compute(p) + 1_000_000, "count": 1})
        p.metadata.update(rank=str(r), world_size=str(ranks), job_id=f"bench:{ranks}", launcher="torchrun")
        name = f"job.rank{r}.hatchet"
        hatchet.write(p, folder / name)
        names.append(name)
    return names


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--ranks", default="64,256,1024")
    parser.add_argument("--keep", type=Path, help="write the rank files here (kept)")
    args = parser.parse_args()
    print("| ranks | files (MB) | made in | `deuteron view ... --advise` | straggler named |")
    print("|---|---|---|---|---|")
    for ranks in (int(x) for x in args.ranks.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = args.keep / str(ranks) if args.keep else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            straggler = ranks * 37 // 64
            began = time.perf_counter()
            names = make_job(folder, ranks, straggler)
            made = time.perf_counter() - began
            size = sum((folder / n).stat().st_size for n in names) / 1e6
            began = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "deuteron", "view", *names, "--advise"],
                cwd=folder, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            took = time.perf_counter() - began
            named = f"rank {straggler} is the straggler" in proc.stdout
            said = [x for x in proc.stdout.splitlines() if x.startswith("[straggler]")]
            line = said[0] if said else proc.stderr[-300:]
            print(f"| {ranks} | {size:.1f} | {made:.1f} s | {took:.2f} s | {'yes' if named else 'NO'} |")
            print(f"<!-- {line.strip()[:400]} -->", file=sys.stderr)


if __name__ == "__main__":
    main()
