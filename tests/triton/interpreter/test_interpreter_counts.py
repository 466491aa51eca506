"""Real kernels in Triton's interpreter: exact bytes (active lanes only), tl.dot flops, grids."""

from __future__ import annotations

import torch

import deuteron
from tests.check_corpus.correct import histogram_kernel
from tests.helpers import kernels as k
from tests.helpers.profiles import find


def _profile(fn, **options):
    with deuteron.profile(backend="interpreter", **options) as p:
        fn()
    assert p.result is not None
    return p.result


def _matmul_metrics(a: torch.Tensor, b: torch.Tensor) -> dict:
    """The metrics of k.matmul(a, b)'s kernel, profiled, its output checked against torch's."""
    out = {}
    prof = _profile(lambda: out.setdefault("c", k.matmul(a, b)))
    torch.testing.assert_close(out["c"], a @ b, rtol=1e-3, atol=1e-3)
    return find(prof, "matmul_kernel").metrics


def test_masked_vector_add_counts_only_active_lanes():
    x, y = torch.rand(1000), torch.rand(1000)
    result = {}

    def work():
        result["out"] = k.add(x, y, block=256)

    prof = _profile(work)
    torch.testing.assert_close(result["out"], x + y)  # real outputs, not just counts
    node = find(prof, "add_kernel")
    assert node.type == "kernel"
    m = node.metrics
    assert m["count"] == 1
    assert m["bytes_loaded"] == 2 * 1000 * 4
    assert m["bytes_stored"] == 1000 * 4
    assert m["bytes"] == 12000
    assert m["flops"] == 0
    assert m["programs"] == 4
    assert m["grid"] == "4x1x1"
    assert m["time (ns)"] > 0


def test_unmasked_fp16_copy_and_scalar_access():
    src = torch.arange(256, dtype=torch.float16)
    dst = torch.zeros_like(src)
    s_in, s_out = torch.tensor([21], dtype=torch.int32), torch.zeros(1, dtype=torch.int32)

    def work():
        k.unmasked_copy_kernel[(2,)](src, dst, BLOCK=128)
        k.scalar_kernel[(1,)](s_in, s_out)

    prof = _profile(work)
    assert torch.equal(dst, src)
    assert s_out.item() == 42
    assert find(prof, "unmasked_copy_kernel").metrics["bytes"] == 2 * 256 * 2
    assert find(prof, "scalar_kernel").metrics["bytes"] == 8


def test_matmul_flops_are_2mnk_and_split_by_operand_width():
    a, b = torch.rand(64, 64), torch.rand(64, 64)
    m = _matmul_metrics(a, b)
    assert m["flops"] == 2 * 64 * 64 * 64
    assert m["flops32"] == 2 * 64 * 64 * 64
    # each program loads one 32x32 tile of a and of b per k step: 4 programs x 2 steps x 2 tiles,
    # plus the 64x64 output once
    assert m["bytes"] == (4 * 2 * 2 * 32 * 32 + 64 * 64) * 4


def test_masked_matmul_counts_only_in_bounds_bytes_and_whole_tile_flops():
    a, b = torch.rand(40, 40), torch.rand(40, 24)
    m = _matmul_metrics(a, b)
    # grid 2x1, two k steps: tl.dot works on whole 32x32x32 tiles, masked lanes included
    assert m["flops"] == 2 * 1 * 2 * (2 * 32 * 32 * 32)
    a_elems = 40 * 40  # every element of a once (one column block)
    b_elems = 2 * 40 * 24  # all of b by each of the two row blocks
    c_elems = 40 * 24
    assert m["bytes"] == (a_elems + b_elems + c_elems) * 4


def test_fp16_dot_lands_in_flops16():
    a, b = torch.rand(32, 32, dtype=torch.float16), torch.rand(32, 32, dtype=torch.float16)
    prof = _profile(lambda: k.matmul(a, b))
    m = find(prof, "matmul_kernel").metrics
    assert m["flops16"] == 2 * 32**3
    assert "flops32" not in m


def test_atomics_count_read_and_write():
    x = torch.randint(0, 8, (100,), dtype=torch.int32)
    counts = torch.zeros(8, dtype=torch.int32)
    prof = _profile(lambda: histogram_kernel[(2,)](x, counts, 100, BLOCK=64))
    assert torch.equal(counts, torch.bincount(x, minlength=8).to(torch.int32))
    m = find(prof, "histogram_kernel").metrics
    assert m["bytes_loaded"] == 100 * 4 + 100 * 4
    assert m["bytes_stored"] == 100 * 4


def test_repeated_launches_aggregate_under_their_scopes():
    x, y = torch.rand(512), torch.rand(512)

    def work():
        for _ in range(3):
            with deuteron.cpu_timed_scope("step"):  # a plain scope records no cpu_time (Proton's rule)
                k.add(x, y)
                k.add(x, y)
        k.add(x, y)

    prof = _profile(work)
    assert find(prof, "step", "add_kernel").metrics["count"] == 6
    assert find(prof, "step", "add_kernel").metrics["bytes"] == 6 * 512 * 12
    assert find(prof, "add_kernel").metrics["count"] == 1
    assert find(prof, "step").metrics["cpu_time (ns)"] > 0


def test_triton_hook_uses_launch_metadata_like_proton():
    x, y, out = torch.rand(1000), torch.rand(1000), torch.empty(1000)
    prof = _profile(lambda: k.hooked_add_kernel[(4,)](x, y, out, 1000, BLOCK=256), hook="triton")
    node = find(prof, "add_1000")  # the hook renames the kernel, as Proton does
    assert node.metrics["flops"] == 1000
    assert node.metrics["bytes"] == 12000
    # without the hook the kernel keeps its own name and measured counts
    prof2 = _profile(lambda: k.hooked_add_kernel[(4,)](x, y, out, 1000, BLOCK=256))
    assert find(prof2, "hooked_add_kernel").metrics["flops"] == 0


def test_python_context_attributes_kernels_to_source_lines():
    x, y = torch.rand(256), torch.rand(256)

    def launch_here():
        k.add(x, y)

    prof = _profile(launch_here, context="python")
    names = [n.name for n in prof.root.walk()]
    assert any(n.endswith("@launch_here") and "test_interpreter_counts.py" in n for n in names), names
    assert any(n.endswith("@add") and n.split(":")[0].endswith("kernels.py") for n in names), names
    # our own frames and Triton's stay out (compare package folders: the checkout itself may be
    # in a folder called "deuteron")
    import os

    import triton

    ours = os.path.dirname(os.path.abspath(deuteron.__file__)) + os.sep
    theirs = os.path.dirname(os.path.abspath(triton.__file__)) + os.sep
    assert not any(n.startswith((ours, theirs)) for n in names), names


def test_state_is_the_kernels_parent_frame():
    x, y = torch.rand(256), torch.rand(256)

    def work():
        with deuteron.state("warmup"):
            k.add(x, y)
        k.add(x, y)

    prof = _profile(work)
    kernel = find(prof, "add_kernel")
    assert kernel.metrics["count"] == 1
    assert find(prof, "warmup", "add_kernel").metrics["count"] == 1
    assert find(prof, "warmup").type == "state"


def test_launch_metadata_gets_the_record_a_compiled_launch_gets(tmp_path):  # type: ignore[no-untyped-def]
    """Proton users read e.g. ``metadata.num_ctas`` in their hook: under the interpreter it gets
    the same KernelMetadata fields as a compiled launch (from Triton's own option parsing for the
    driver's target), in a fresh process where Triton's notice about TRITON_DEFAULT_FP_FUSION
    (about Deuteron's option parsing, not the script's) is not shown."""
    from tests.helpers.cli import run_cli

    (tmp_path / "job.py").write_text(
        "import torch, triton, triton.language as tl\n"
        "from triton.backends.compiler import GPUTarget\n"
        "from triton.compiler import ASTSource\n"
        "seen = {}\n"
        "def meta(grid, metadata, args):\n"
        "    seen.update(metadata._asdict())\n"
        "    return {'name': f'k_ctas{metadata.num_ctas}_w{metadata.num_warps}', 'flops': args['n']}\n"
        "@triton.jit(launch_metadata=meta)\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    i = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + i, i.to(tl.float32), mask=i < n)\n"
        "k[(1,)](torch.empty(100), 100, BLOCK=128, num_warps=8)\n"
        "assert seen['target'] == GPUTarget('cuda', 90, 32) and seen['arch'] == 'sm90', seen\n"
        "assert (seen['name'], seen['num_ctas'], seen['num_stages']) == ('k', 1, 3), seen\n"
        "import triton.compiler.compiler as cc\n"
        "ref = cc.make_backend(seen['target']).parse_options({'num_warps': 8}).__dict__\n"
        "missing = set(ref) - set(seen)\n"
        "assert not missing, missing\n"
        "print('ok', len(seen))\n"
    )
    proc = run_cli("run", "-b", "interpreter", "-k", "triton", "job.py", cwd=tmp_path)  # a GPU too
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok "), proc.stdout
    assert "TRITON_DEFAULT_FP_FUSION" not in proc.stderr
    from deuteron.formats import hatchet

    tree = hatchet.read(tmp_path / "deuteron.hatchet")
    assert find(tree, "k_ctas1_w8").metrics["flops"] == 100
