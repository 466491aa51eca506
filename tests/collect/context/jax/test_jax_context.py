"""The JAX context without a GPU: op names into frames, HLO text into instructions, kernels into
executions (synthetic executables), and the compile wrapper on JAX's CPU backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deuteron.collect.context.jax.compile_wrapper import CompiledModule
from deuteron.collect.context.jax.hlo import BACKWARD, Executable, Instruction, frames, parse_module
from deuteron.collect.context.jax.places import JAX_PLACE
from deuteron.collect.context.jax.source import JaxContext
from deuteron.collect.session import Session
from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES_DIR


@pytest.mark.parametrize(
    ("op_name", "expected"),
    [
        (
            "jit(step)/jvp(encoder)/layers.0/attn/q/dot_general",
            ["encoder", "layers.0", "attn", "q", "dot_general"],
        ),
        (
            "jit(step)/transpose(jvp(encoder))/layers.1/mlp/mul",
            ["encoder", "layers.1", "mlp", BACKWARD, "mul"],
        ),
        ("jit(step)/transpose(jvp())/mul", [BACKWARD, "mul"]),
        ("jit(step)/jvp()/sub", ["sub"]),
        ("jit(step)/sgd/sub", ["sgd", "sub"]),
        ("jit(step)/jit(inner)/transpose(jvp(a/b))/mul", ["inner (jit)", "a", "b", BACKWARD, "mul"]),
        ("jit(step)/vmap(blk)/tanh", ["blk", "tanh"]),
        ("", []),
    ],
)
def test_op_names_become_scope_backward_and_primitive_frames(op_name: str, expected: list[str]) -> None:
    assert frames(op_name, "step") == expected


HLO = (FIXTURES_DIR / "jax_small.hlo").read_text()  # a hand-made module


def test_hlo_text_gives_the_instructions_that_launch_kernels_outside_fusion_bodies() -> None:
    ex = parse_module(HLO)
    assert ex.module == "jit_step" and ex.function == "step"
    assert [(i.name, i.opcode) for i in ex.instructions] == [
        ("loop_add_fusion", "fusion"),
        ("reduce.3", "reduce"),
        ("custom-call.4", "custom-call"),
    ]
    assert ex.instructions[1].op_name == "jit(step)/transpose(jvp(blk))/reduce_sum"  # the first of several
    assert set(ex.by_kernel) == {"loop_add_fusion", "reduce_3", "custom_call_4"}
    assert Executable.from_table(ex.table()).instructions == ex.instructions


def executable(module: str, *names: str) -> Executable:
    return Executable(
        module, [Instruction(n, "fusion", f"jit({module})/{n.split('.')[0]}", i) for i, n in enumerate(names)]
    )


def test_alignment_follows_the_schedule_and_takes_reused_kernels() -> None:
    ex = executable("step", "loop_add_fusion.1", "gemm_fusion_dot.2", "loop_add_fusion.3")
    assert ex.align(0, "loop_add_fusion_1") == (1, 0)
    assert ex.align(1, "gemm_fusion_dot_2") == (2, 1)
    assert ex.align(2, "loop_add_fusion_1") == (3, 2)  # layer 2 reusing layer 1's kernel
    assert ex.align(2, "gemm_fusion_dot_2") is None  # a GEMM kernel for an add fusion: not this execution
    assert ex.align(3, "loop_add_fusion_1") is None  # the execution is over


def context_with(*executables: Executable) -> JaxContext:
    jx = JaxContext(Session(0, "unused", backend="interpreter", context="jax").tree.contexts)
    for ex in executables:
        compiled = CompiledModule(ex.module, None, 1, 2)
        compiled.parsed = ex
        jx.compiled.append(compiled)
    return jx


def frames_of(jx: JaxContext, place: int) -> list[str]:
    out, place_id = [], place & (JAX_PLACE - 1)
    while place_id:
        place_id, frame = jx.places[place_id]
        out.append(frame)
    return out[::-1]


def assign(
    jx: JaxContext, names: list[str], graph: list[int] | None = None, corr: list[int] | None = None
) -> list[list[str]]:
    n = len(names)
    places = jx.assign(
        names,
        np.array(graph or [0] * n, np.int64),
        np.array(corr or list(range(n)), np.int64),
        np.arange(n, dtype=np.int64) + 1000,
        np.arange(n, dtype=np.int64) + 10,  # launched after the compiles (which ended at 2)
        np.zeros(n, np.int64),
        np.full(n, 7, np.uint64),
    )
    return [frames_of(jx, int(p)) if p else [] for p in places.tolist()]


def test_eager_ops_run_back_to_back_are_their_own_executions_not_a_sliver_of_a_step() -> None:
    step = executable(
        "train_step", "loop_multiply_fusion", "gemm_fusion_dot.1", "input_reduce_fusion", "loop_add_fusion"
    )
    mul, total = (
        executable("multiply", "loop_multiply_fusion"),
        executable("_reduce_sum", "input_reduce_fusion"),
    )
    jx = context_with(step, mul, total)
    out = assign(jx, ["loop_multiply_fusion", "input_reduce_fusion"] * 2)
    assert [f[0] for f in out] == ["multiply (jit)", "_reduce_sum (jit)"] * 2
    # the step's own kernels, run whole, stay one execution of the step
    out = assign(jx, ["loop_multiply_fusion", "gemm_fusion_dot_1", "input_reduce_fusion", "loop_add_fusion"])
    assert {f[0] for f in out} == {"train_step (jit)"}
    assert out[1] == ["train_step (jit)", "gemm_fusion_dot", "gemm_fusion_dot.1 (HLO)"]


def test_a_graph_is_one_executable_and_each_launch_one_execution() -> None:
    a = executable("a", "fusion.1", "fusion.2")
    b = executable("b", "fusion.1", "fusion.3")
    jx = context_with(a, b)
    out = assign(jx, ["fusion_1", "fusion_3", "fusion_1", "fusion_3"], graph=[5, 5, 5, 5], corr=[1, 1, 2, 2])
    assert [f[-1] for f in out] == ["fusion.1 (HLO)", "fusion.3 (HLO)"] * 2 and {f[0] for f in out} == {
        "b (jit)"
    }


def test_kernels_launched_while_compiling_go_under_compile() -> None:
    jx = context_with(executable("f", "fusion.1"))
    jx.compiled[0].began, jx.compiled[0].ended = 0, 100_000
    assert assign(jx, ["fusion_1"]) == [["f (jit)", "compile"]]


def test_the_compile_wrapper_keeps_each_executable_with_its_scopes_on_jax_cpu(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    import deuteron
    from deuteron.collect import lifecycle
    deuteron.start(str(tmp_path / "jaxcpu"), backend="interpreter", context="jax")
    try:

        @jax.jit
        def f(x: jax.Array) -> jax.Array:
            with jax.named_scope("blk"):
                return jnp.tanh(x) * 2.0

        jax.grad(lambda x: f(x).sum())(jnp.ones(8))
        session = next(s for s in lifecycle.sessions.values() if s.tree.jax is not None)
        executables = [c.executable() for c in session.tree.jax.compiled]
    finally:
        deuteron.finalize()
    assert any(ex.function == "f" for ex in executables)
    paths = {tuple(frames(i.op_name, ex.function)) for ex in executables for i in ex.instructions}
    assert any("blk" in p for p in paths)
    compiler = __import__("jax._src.compiler", fromlist=["compile_or_get_cached"])
    assert not hasattr(compiler.compile_or_get_cached, "__wrapped__")  # the wrapper is gone after the session


def test_jax_context_on_a_machine_without_a_gpu_says_what_it_records(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    script = tmp_path / "f.py"
    script.write_text(
        "import jax, jax.numpy as jnp\nprint(float(jax.jit(lambda x: x * 2)(jnp.ones(3)).sum()))\n"
    )
    proc = run_cli("run", "-c", "jax", "f.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "6.0" in proc.stdout
    assert "-c jax places GPU kernels" in proc.stderr


def library(module: str, *rows: tuple[str, str]) -> Executable:
    return Executable(
        module, [Instruction(n, op, f"jit({module})/{n.split('.')[0]}", i) for i, (n, op) in enumerate(rows)]
    )


def test_cudnn_and_cublas_kernels_go_to_their_custom_calls() -> None:
    ex = library(
        "step",
        ("loop_add_fusion", "fusion"),
        ("cudnn-conv-bw-input.1", "custom-call"),
        ("cudnn-conv-bw-filter.2", "custom-call"),
        ("custom-call.3", "custom-call"),
        ("custom-call.4", "custom-call"),
    )
    at = ex.align(0, "loop_add_fusion")
    assert at == (1, 0)
    taken = []
    for kernel in (
        "sm90_xmma_dgrad_implicit_gemm_cudnn",  # backward-input convolution
        "init_device_workspace_kernel",  # set-up: opens the next call
        "sm90_xmma_wgrad_indexed_implicit_gemm_cudnn",  # backward-filter, after its set-up
        "sm90_xmma_gemm_f32f32_cublas",  # a GEMM: the next call
        "cublasLt19splitKreduce_kernel",  # its split-K reduction stays with it
        "sm90_xmma_gemm_f32f32_cublas",
    ):
        step = ex.align(at[0], kernel)
        assert step is not None
        at = step
        taken.append(ex.instructions[step[1]].name if step[1] is not None else None)
    assert taken == [
        "cudnn-conv-bw-input.1",
        "cudnn-conv-bw-filter.2",
        "cudnn-conv-bw-filter.2",
        "custom-call.3",
        "custom-call.3",
        "custom-call.4",
    ]
    assert (
        library("f", ("fusion.1", "fusion")).align(1, "sm90_xmma_gemm_cublas") is None
    )  # no call to take it


def test_library_kernels_launched_between_graphs_continue_the_graphs_execution() -> None:
    step = library(
        "update", ("loop_add_fusion", "fusion"), ("cudnn-conv.1", "custom-call"), ("fusion.2", "fusion")
    )
    eager = executable("equal", "loop_compare_fusion")
    jx = context_with(step, eager)
    names = ["loop_add_fusion", "loop_compare_fusion", "sm90_xmma_fprop_implicit_gemm_cudnn"]
    n = len(names)
    places = jx.assign(
        names,
        np.array([9, 0, 0], np.int64),  # the step's first command buffer, then two direct launches
        np.array([1, 2, 3], np.int64),
        np.arange(n, dtype=np.int64),
        np.array([10, 11, 12], np.int64),
        np.zeros(n, np.int64),
        np.full(n, 7, np.uint64),
    )
    out = [frames_of(jx, int(p)) for p in places.tolist()]
    assert out[1][0] == "equal (jit)"
    assert out[2] == ["update (jit)", "cudnn-conv", "cudnn-conv.1 (HLO)"]


def test_a_while_loop_runs_its_condition_and_body_in_place_and_repeats() -> None:
    jax = pytest.importorskip("jax")
    from deuteron.collect.context.jax.hlo import kernel_name

    f = jax.jit(lambda k: jax.random.truncated_normal(k, -2.0, 2.0, (64, 64)))  # threefry: a while loop
    ex = parse_module(f.lower(jax.random.PRNGKey(0)).compile().as_text())
    assert len(ex.loops) == 1
    begin, end = ex.loops[0]
    names = [kernel_name(i.name) for i in ex.instructions]
    assert names[begin:end] and names[end:]  # the loop's steps sit between the entry's
    at = 0
    for kernel in names[:begin] + names[begin:end] * 3 + names[end:]:  # three iterations
        step = ex.align(at, kernel)
        assert step is not None, kernel
        at = step[0]
    assert at == len(names)
    assert Executable.from_table(ex.table()).loops == ex.loops


def test_a_cut_execution_in_a_stream_leaves_the_rest_placed() -> None:
    a = executable("a", *[f"fusion.{i}" for i in range(1, 8)])
    jx = context_with(a, executable("b", "loop_add_fusion"))
    whole = [f"fusion_{i}" for i in range(1, 8)]
    # an execution, the tail of one whose start was not seen, an eager op, then a whole one again
    out = assign(jx, [*whole, "fusion_5", "fusion_6", "fusion_7", "loop_add_fusion", *whole])
    assert [f[0] for f in out] == ["a (jit)"] * 10 + ["b (jit)"] + ["a (jit)"] * 7
    assert out[7][-1] == "fusion.5 (HLO)"
