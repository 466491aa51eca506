"""A real model: one training step of a small Hugging Face Llama (4 layers, hidden 1024, bf16,
randomly initialised from its config, so no download), with SDPA attention and AdamW."""

import torch

_state = {}


def setup(device="cuda"):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=4,
        num_attention_heads=16,
        num_key_value_heads=16,
        max_position_embeddings=1024,
        attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config).to(device=device, dtype=torch.bfloat16)
    _state.update(
        model=model,
        opt=torch.optim.AdamW(model.parameters(), lr=1e-4),
        ids=torch.randint(0, config.vocab_size, (8, 512), device=device),
    )


def step():
    s = _state
    out = s["model"](input_ids=s["ids"], labels=s["ids"])
    out.loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
