"""``-c jax``: kernels under jitted function > named_scope path > HLO op. The context source
(:mod:`.source`) and its parts: the compile wrapper (:mod:`.compile_wrapper`, the only module touching
JAX internals), an HLO text reader (:mod:`.hlo`, which imports nothing), the matching of kernels to
executables' schedules (:mod:`.schedule`) and the place ids it hands out (:mod:`.places`).
Importing this package does not import JAX."""
