"""A real model whose Triton kernels nobody here wrote: the Llama training step of
``workloads/llama_step.py`` under ``torch.compile`` (Inductor generates the Triton kernels), timed
over 10 steps after 3 warm-up steps (``--mode``: torch.compile's mode, ``default``,
``max-autotune`` or ``reduce-overhead`` (CUDA graphs); ``eager``: not compiled, for the tree to
compare with). Meant to run under ``deuteron run -c torch``:

    deuteron run --sample -c torch -n llama benchmarks/compiled_llama.py
    deuteron run -c torch -n ro benchmarks/compiled_llama.py --mode reduce-overhead
    deuteron view llama.hatchet --advise
"""

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))
import llama_step as w  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument(
    "--mode", default="default", choices=["default", "max-autotune", "reduce-overhead", "eager"]
)
parser.add_argument("--steps", type=int, default=10)
args = parser.parse_args()
w.setup("cuda")
if args.mode != "eager":
    w._state["model"] = torch.compile(w._state["model"], mode=args.mode)
for _ in range(3):
    w.step()
torch.cuda.synchronize()
began = time.perf_counter()
for _ in range(args.steps):
    w.step()
torch.cuda.synchronize()
print(f"{args.mode}: {(time.perf_counter() - began) / args.steps * 1e3:.2f} ms/step")
