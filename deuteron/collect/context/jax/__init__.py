"""``-c jax``: kernels under jitted function > named_scope path > HLO op. The context source
(:mod:`.source`, the only module touching JAX internals) and an HLO text reader (:mod:`.hlo`, which
imports nothing). Importing this package does not import JAX."""
