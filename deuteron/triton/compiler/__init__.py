"""Triton's compiler, for explain: each launch keyed with Triton's own binder (:mod:`.capture`),
compiled for a target without a GPU (:mod:`.compile`), the CUDA tools the wheel bundles
(:mod:`.tools`) and GPU targets (:mod:`.targets`)."""
