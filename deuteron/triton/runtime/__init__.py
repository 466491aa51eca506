"""What a GPU program asks of Triton's runtime, answered without a GPU or beside one: an emulated
driver (a chosen GPU's target and properties, a CPU ``do_bench``), ``@triton.autotune`` (each config
once, benchmark launches under ``<autotune>``), Triton's launch-hook chains, a compiled launch run in
the interpreter, and a kernel's ``launch_metadata`` evaluated for an interpreted launch."""
