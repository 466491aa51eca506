"""A real model whose Triton kernels nobody here wrote: the Llama training step of
``workloads/llama_step.py`` under ``torch.compile`` (Inductor generates the Triton kernels), timed
over 10 steps after 3 warm-up steps. Meant to run under ``deuteron run --sample -c torch``:

    deuteron run --sample -c torch -n llama benchmarks/compiled_llama.py
    deuteron view llama.hatchet --advise
"""

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))
import llama_step as w  # noqa: E402

w.setup("cuda")
w._state["model"] = torch.compile(w._state["model"])
for _ in range(3):
    w.step()
torch.cuda.synchronize()
began = time.perf_counter()
for _ in range(10):
    w.step()
torch.cuda.synchronize()
print(f"{(time.perf_counter() - began) / 10 * 1e3:.2f} ms/step")
