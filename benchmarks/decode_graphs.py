"""A serving loop: a Hugging Face Llama's decode step captured once and replayed many times.

A small Llama (randomly initialised from its config: no download) decodes one token at a time
against a static KV cache, the way serving engines run it: ``--mode graph`` captures the step
with ``torch.cuda.graph`` once and replays it ``--tokens`` times (only the position and the input
token change between replays, copied into the captured buffers); ``reduce-overhead`` lets
``torch.compile(mode="reduce-overhead")`` capture it; ``eager`` launches every kernel every
step. Prints the time per token. Meant to run under ``deuteron run -c torch`` (and ``--trace``,
``--sample``) and under Proton, so that each replay's kernels can be checked to sit under the
modules and scopes they were captured in:

    python benchmarks/decode_graphs.py --mode graph --tokens 2000
    deuteron run -c torch -n graph benchmarks/decode_graphs.py --mode graph
"""

from __future__ import annotations

import argparse
import inspect
import time

import torch

import deuteron


def model_and_cache(max_len: int):  # type: ignore[no-untyped-def]
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
        num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=max_len,
        attn_implementation="sdpa",
    )  # fmt: skip
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    params = inspect.signature(StaticCache.__init__).parameters
    options = {"config": config, "max_cache_len": max_len}
    for name, value in (
        ("max_batch_size", 1),
        ("batch_size", 1),
        ("device", "cuda"),
        ("dtype", torch.bfloat16),
    ):
        if name in params:
            options[name] = value
    return model, StaticCache(**options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="graph", choices=["eager", "graph", "reduce-overhead"])
    parser.add_argument("--tokens", type=int, default=1000)
    args = parser.parse_args()
    max_len = args.tokens + 16
    model, cache = model_and_cache(max_len)
    token = torch.zeros(1, 1, dtype=torch.long, device="cuda")
    position = torch.zeros(1, dtype=torch.long, device="cuda")

    def decode() -> torch.Tensor:
        out = model(input_ids=token, past_key_values=cache, cache_position=position, use_cache=True)
        return out.logits[:, -1].argmax(-1, keepdim=True)

    with torch.no_grad():
        if args.mode == "reduce-overhead":
            step = torch.compile(decode, mode="reduce-overhead")
        elif args.mode == "graph":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):  # warm-up: the cache's lazy buffers, cuBLAS's workspaces
                    decode()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with deuteron.scope("capture"), torch.cuda.graph(graph):
                captured = decode()

            def step() -> torch.Tensor:
                graph.replay()
                return captured
        else:
            step = decode
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        began = time.perf_counter()
        for i in range(args.tokens):
            position.fill_(8 + i)
            with deuteron.scope("decode"):
                token.copy_(step())
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - began
    print(f"{args.mode}: {elapsed / args.tokens * 1e6:.1f} us/token over {args.tokens} tokens")


if __name__ == "__main__":
    main()
