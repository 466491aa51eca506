"""The native context's CUPTI data from an H100, replayed without a GPU (tests/fixtures/cupti_native).

Recorded by ``scripts/record_native_fixture.py`` (torch 2.11+cu130, triton 3.6): twice in scope
``step``, a torch add, a matmul and its sum (launched from libtorch's C++, the matmul through
cuBLAS), and a Triton kernel (launched from Triton's compiled launcher). Every launch carries the
id of its native path; the recorded table names the frames.
"""

from __future__ import annotations

from deuteron.collect.backends.cupti import records, replay
from deuteron.collect.context.native import NATIVE_PLACE
from deuteron.collect.session import Session
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.profiles import child_path as at
from tests.helpers.profiles import kernel_count

FIXTURE = FIXTURES_DIR / "cupti_native"
TORCH_ADD = (
    "libtorch_python.so (internal)",
    "at::_ops::add_Tensor::call (libtorch_cpu.so)",
    "libtorch_cpu.so (internal)",
    "at::_ops::add_Tensor::redispatch (libtorch_cpu.so)",
    "libtorch_cuda.so (internal)",
    "at::native::add_kernel (libtorch_cuda.so)",
)


def replayed() -> Session:
    session = Session(0, "fixture", backend="interpreter", context="native")
    replay(FIXTURE, session)
    return session


def test_every_launch_carries_a_native_path() -> None:
    entries = records.entries((FIXTURE / "drain000.entries").read_bytes())
    launches = entries[entries["kind"] == records.LAUNCH]
    assert len(launches) == 10
    assert ((launches["op"] & NATIVE_PLACE) != 0).all()


def test_kernels_land_under_the_c_frames_they_were_launched_from() -> None:
    root = replayed().profile.root
    step = at(root, "step")
    assert kernel_count(root) == kernel_count(step) == 10
    add = at(step, *TORCH_ADD)
    assert kernel_count(add) == 2 and any("CUDAFunctor_add" in n.name for n in add.walk())
    mm = at(step, "libtorch_python.so (internal)", "at::_ops::matmul::call (libtorch_cpu.so)")
    cublas = [n for n in mm.walk() if n.name == "cublasSgemm_v2 (libcublas.so.13)"]
    # cuBLAS ran two GEMM kernels (two xmma variants) for the matmul in each of the two steps
    assert len(cublas) == 1 and kernel_count(cublas[0]) == 4
    assert "at::native::structured_mm_out_cuda::impl (libtorch_cuda.so)" in {n.name for n in mm.walk()}
    # Triton launches from its compiled launcher, whose symbols are not exported
    triton = at(step, "__triton_launcher.cpython-312-x86_64-linux-gnu.so (internal)", "scale_kernel")
    assert kernel_count(triton) == 2
