"""The fixed parts of a reproducer: the functions every one holds, as the file shows them.

:mod:`.writer` puts them between the parts it makes from the record (the kernel, the buffers, the
launch, what ``--check`` expects); they are plain text here so that they read as the file does.
"""

from __future__ import annotations

# (rtol, atol) by dtype; integers and bools must be equal. One table: the file's TOLERANCE is
# written from it, and deuteron diff's run of two reproducers (.outputs) reads it.
TOLERANCE_BY_DTYPE = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}


def _g(x: float) -> str:
    return f"{x:g}".replace("e-0", "e-")


TOLERANCES = (
    "TOLERANCE = {  # (rtol, atol) by dtype; integers and bools must be equal\n"
    + "".join(
        f"    torch.{name}: ({_g(rtol)}, {_g(atol)}),\n" for name, (rtol, atol) in TOLERANCE_BY_DTYPE.items()
    )
    + "}"
)

HELPERS = '''\
def recorded(name, dtype, size, pad):
    """A buffer as recorded, on DEVICE; the `pad` elements before it keep its 16-byte alignment."""
    with np.load(VALUES) as values:
        data = torch.from_numpy(values[name])
    region = torch.empty(pad + size, dtype=dtype, device=DEVICE)[pad:]
    region.copy_(data.view(dtype) if data.dtype != dtype else data)
    return region


def view(buffer, shape, strides, offset):
    """A tensor argument: a view of its buffer with the recorded strides, `offset` elements in."""
    return buffer.as_strided(shape, strides, buffer.storage_offset() + offset)
'''

LIKE = '''

def like(dtype, size, pad, low, high, mean, std):
    """A buffer whose values were past the record's byte limit: values with its range, mean and spread."""
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        data = torch.rand(size, generator=g) < mean
    elif dtype.is_floating_point or dtype.is_complex:
        data = (torch.randn(size, generator=g, dtype=torch.float64) * std + mean).clamp(low, high)
    else:
        data = torch.randint(int(low), min(int(high) + 1, 2**63 - 1), (size,), generator=g)
    region = torch.empty(pad + size, dtype=dtype, device=DEVICE)[pad:]
    region.copy_(data.to(dtype))
    return region
'''

CHECK = '''

def check(bufs):
    """Compare every buffer with EXPECTED: print the first mismatch and return 1, else 0."""
    if REGENERATED:
        print(f"outputs not compared: {', '.join(REGENERATED)} made from statistics, not recorded values")
        return 0
    with np.load(VALUES) as values:
        for name, key in EXPECTED.items():
            got = bufs[name].cpu()
            want = torch.from_numpy(values[key])
            want = want.view(got.dtype) if want.dtype != got.dtype else want
            if got.dtype.is_floating_point or got.dtype.is_complex:
                rtol, atol = TOLERANCE.get(got.dtype, (1e-1, 1e-1))
                if not got.dtype.is_complex:  # compared in float64: float8 has no isclose
                    got, want = got.double(), want.double()
                same = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
            else:
                same = got == want
            if not bool(same.all()):
                i = int((~same).nonzero()[0, 0])
                at = f"element {i}"
                if name in SHAPES:
                    at = f"index {tuple(int(x) for x in np.unravel_index(i, SHAPES[name]))}"
                differ = int((~same).sum())
                print(f"mismatch in {name} at {at}: got {got[i].item()}, expected {want[i].item()} "
                      f"({differ} of {same.numel()} differ)")
                return 1
    written = [name for name, key in EXPECTED.items() if key.endswith(".after")]
    unchanged = [name for name, key in EXPECTED.items() if not key.endswith(".after")]
    nothing = "nothing recorded to compare" if UNCHECKED else "the launch changed no buffer"
    parts = [", ".join(written) or nothing]
    if unchanged:
        parts.append(f"unchanged, as recorded: {', '.join(unchanged)}")
    if UNCHECKED:
        parts.append(f"not compared: {', '.join(UNCHECKED)} (past the byte limit)")
    print("outputs match: " + "; ".join(parts))
    return 0
'''


def main_function(summary: str, description: str) -> str:
    """``main()``: the launch alone, one line on where it ran and how long it took, ``--check``.
    ``summary`` (``add_kernel: launch 2 of 2, grid (98, 1, 1)``) and ``description`` are the
    writer's, made of checked names and numbers."""
    return f'''

def main():
    parser = argparse.ArgumentParser(description="{description}")
    parser.add_argument("--check", action="store_true", help="compare its outputs with the recorded ones")
    options = parser.parse_args()
    if REGENERATED:
        print(f"note: {{', '.join(REGENERATED)}} made from recorded statistics (past DEUTERON_RECORD_BYTES)")
    first = ""
    if DEVICE == "cuda":  # the first launch compiles the kernel: on its own buffers, timed apart
        start = time.perf_counter()
        launch(buffers())
        torch.cuda.synchronize()
        first = f" (the first launch, compiling it: {{(time.perf_counter() - start) * 1e3:.1f}} ms)"
    bufs = buffers()
    start = time.perf_counter()
    launch(bufs)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    took = time.perf_counter() - start
    where = "the GPU" if DEVICE == "cuda" else "the CPU, in Triton's interpreter"
    digits = 3 if DEVICE == "cuda" else 1  # a GPU launch takes microseconds
    print(f"{summary}, on {{where}}: {{took * 1e3:.{{digits}}f}} ms{{first}}")
    return check(bufs) if options.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
'''
