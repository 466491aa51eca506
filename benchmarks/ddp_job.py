"""A small Llama (Hugging Face ``transformers``) trained for a few steps under DDP or FSDP2, one
process per GPU: the job behind the multi-rank numbers in docs/benchmarks.md and the recorded
``tests/fixtures/ranks_*`` files.

    torchrun --nproc_per_node 2 benchmarks/ddp_job.py --mode ddp --straggler 1
    torchrun --nproc_per_node 2 -m deuteron run -c torch --trace benchmarks/ddp_job.py --mode fsdp2

``--straggler R`` gives rank R twice the tokens per step (its forward and backward take about
twice as long: the rank the others wait for in every gradient all-reduce). ``--profiler`` wraps
the steps in ``torch.profiler`` (CPU and CUDA activities), as a user of it would, to compare the
costs. Rank 0 prints one JSON line: milliseconds per step (median after the warm-up steps).
Without CUDA it runs on the CPU over gloo (a smoke test of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist


class _SmallLM(torch.nn.Module):
    """Where ``transformers`` is missing (this script's smoke test on a bare CPU machine): an
    embedding, encoder layers and a head, called as a causal LM is."""

    def __init__(self, layers: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(8192, 256)
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(256, 4, 512, batch_first=True) for _ in range(layers)
        )
        self.head = torch.nn.Linear(256, 8192)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Any:
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x)
        logits = self.head(x)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        return argparse.Namespace(loss=loss)


def _model(device: torch.device, layers: int, hidden: int, seq: int) -> torch.nn.Module:
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        torch.manual_seed(0)
        return _SmallLM(layers).to(device)

    config = LlamaConfig(
        vocab_size=8192,
        hidden_size=hidden,
        intermediate_size=hidden * 11 // 4,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=hidden // 64,
        max_position_embeddings=max(1024, seq),
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).to(device)


def _wrap(model: torch.nn.Module, mode: str, device: torch.device) -> torch.nn.Module:
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    from torch.distributed.fsdp import fully_shard

    inner = getattr(model, "model", model)  # a Llama's decoder layers, or the small model's
    for layer in inner.layers:  # type: ignore[union-attr]
        fully_shard(layer)
    fully_shard(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("ddp", "fsdp2"), default="ddp")
    parser.add_argument("--steps", type=int, default=10, help="measured steps (after 3 warm-up steps)")
    parser.add_argument("--straggler", type=int, default=-1, help="this rank gets twice the tokens")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=512, help="the model's width (a multiple of 64)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--profiler", metavar="DIR", help="run under torch.profiler, traces into DIR")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    model = _wrap(_model(device, args.layers, args.hidden, args.seq), args.mode, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = args.batch * (2 if rank == args.straggler else 1)
    tokens = torch.randint(0, 8192, (batch, args.seq), device=device)

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    profiler: Any = None
    if args.profiler:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        profiler = profile(activities=activities)
        profiler.__enter__()
    times = []
    for i in range(3 + args.steps):
        began = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        if i >= 3:
            times.append((time.perf_counter() - began) * 1e3)
    if profiler is not None:
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(os.path.join(args.profiler, f"torch.rank{rank}.json"))
    if rank == 0:
        print(
            json.dumps({"mode": args.mode, "ms_per_step": statistics.median(times), "steps": times}),
            flush=True,
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
