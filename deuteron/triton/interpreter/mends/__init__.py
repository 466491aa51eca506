"""Mends of Triton's interpreter, one job each: NumPy scalars (:mod:`.scalars`), bf16 arithmetic on
values (:mod:`.bf16`), atomics, libdevice (wiring in :mod:`.libdevice`, NumPy implementations in
:mod:`.libdevice_math`, :mod:`.libdevice_bits` and :mod:`.libdevice_bessel`), device-function calls,
and compile-time checks. Each is a patch group that can be applied and undone on its own."""
