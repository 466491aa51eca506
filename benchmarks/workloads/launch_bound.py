"""Launch-bound reference workload: ~100 short kernels per step."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


_state = {}


def setup(device="cuda"):
    torch.manual_seed(0)
    layers = [torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.LayerNorm(512)) for _ in range(8)]  # noqa: E501
    model = torch.nn.Sequential(*layers).to(device)
    _state.update(
        model=model,
        opt=torch.optim.AdamW(model.parameters(), lr=1e-4),
        x=torch.randn(64, 512, device=device),
        a=torch.randn(1 << 16, device=device),
        b=torch.randn(1 << 16, device=device),
    )
    _state["o"] = torch.empty_like(_state["a"])


def step():
    s = _state
    for _ in range(4):
        add_kernel[(64,)](s["a"], s["b"], s["o"], s["a"].numel(), BLOCK=1024)
    loss = s["model"](s["x"]).square().mean()
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
