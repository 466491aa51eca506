#!/bin/bash
# Runs on the lent GPU machine (see docs/benchmarks.md): build the shim, GPU tests, fixtures, benchmarks.
# Usage: bash scripts/device_gpu.sh [smoke|tests|record|torch|jax|native|bench|check|explain|real|proton|all]   (results under $OUT)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
what=" ${*:-all} "
has() { [[ $what == *" $1 "* || $what == *" all "* ]]; }
python3 setup.py -q build_ext --inplace 2>&1 | tail -5
python3 -c "import deuteron.collect.backends.cupti as c; print('shim:', c.unavailable_reason(), c.loaded_library())"
if has smoke; then
  python3 - <<'PY'
import torch, deuteron.collect.backends.cupti.library as L
print("after import torch, libcupti loaded:", L._loaded())
print("candidates:", [(s, str(p)) for s, p in L.candidates()][:4])
PY
  python3 - <<'PY'
import sys; import os; sys.path.insert(0, "benchmarks/workloads")
import torch, deuteron, launch_bound as w
w.setup("cuda"); w.step(); torch.cuda.synchronize()
for ctx in ("shadow", "python"):
    deuteron.start(f"smoke_{ctx}", backend="cupti", context=ctx)
    with deuteron.scope("train"):
        for _ in range(3): w.step()
    deuteron.finalize()
    os_ = __import__("subprocess").run([sys.executable, "-m", "deuteron", "view", f"smoke_{ctx}.hatchet", "-m", "time/us,count", "-d", "4"], capture_output=True, text=True)
    print(os_.stdout[-2500:], os_.stderr[-800:])
PY
fi
if has tests; then
  DEUTERON_TEST_GPU=1 timeout ${TTIMEOUT:-400} python3 -m pytest -m gpu tests -q -p no:cacheprovider --tb=short 2>&1 | tail -${TAILN:-40}
fi
if has record; then
  rm -rf /tmp/rec && mkdir -p /tmp/rec
  for ctx in shadow python; do
    DEUTERON_CUPTI_RECORD=/tmp/rec/cupti_$ctx python3 scripts/record_cupti_fixture.py $ctx 2>&1 | tail -3
    python3 -m deuteron view fixture.hatchet -m count -d 5 | head -40
    python3 -c "
import numpy as np, glob
from deuteron.collect.backends.cupti import records
for f in sorted(glob.glob('/tmp/rec/cupti_$ctx/*.entries')):
    e = records.entries(open(f,'rb').read()); k = records.kernels(open(f[:-8]+'.kernels','rb').read())
    print(f, 'entries by kind', np.unique(e['kind'], return_counts=True), 'kernels', len(k))"
  done
  tar czf $OUT/cupti_fixtures.tgz -C /tmp/rec .
fi
if has torch; then
  rm -rf /tmp/rect && mkdir -p /tmp/rect
  DEUTERON_CUPTI_RECORD=/tmp/rect/cupti_torch python3 scripts/record_torch_fixture.py 2>&1 | tail -3
  python3 -m deuteron view fixture.hatchet -m time/us,count,cpu_time/ms -d 7 | head -${TAILN:-60}
  tar czf $OUT/torch_fixture.tgz -C /tmp/rect .
  DEUTERON_TEST_GPU=1 timeout 400 python3 -m pytest tests/collect/context/torch/test_torch_context_gpu.py -q -p no:cacheprovider --tb=short 2>&1 | tail -30
fi
if has jax; then
  rm -rf /tmp/recj && mkdir -p /tmp/recj
  DEUTERON_CUPTI_RECORD=/tmp/recj/cupti_jax python3 scripts/record_jax_fixture.py 2>&1 | tail -3
  python3 -m deuteron view fixture.hatchet -m time/us,count -d 8 | head -${TAILN:-60}
  tar czf $OUT/jax_fixture.tgz -C /tmp/recj .
  timeout 400 python3 -m pytest tests/collect/context/jax/test_jax_context_gpu.py -q -p no:cacheprovider --tb=short 2>&1 | tail -30
  for r in 1 2 3; do for m in plain shadow jax; do  # interleaved rounds: steady-state step time
    if [ $m = plain ]; then o=$(python3 benchmarks/jax_steps.py --steps 400 2>&1 | tail -1)
    else o=$(python3 -m deuteron run -b cupti -c $m -n /tmp/jb_$m benchmarks/jax_steps.py --steps 400 2>&1 | grep us_per); fi
    echo "round $r $m $o"
  done; done
fi
if has native; then
  rm -rf /tmp/recn && mkdir -p /tmp/recn
  DEUTERON_CUPTI_RECORD=/tmp/recn/cupti_native python3 scripts/record_native_fixture.py 2>&1 | tail -3
  python3 -m deuteron view fixture.hatchet -m time/us,count -d 24 | head -${TAILN:-60}
  tar czf $OUT/native_fixture.tgz -C /tmp/recn .
  DEUTERON_TEST_GPU=1 timeout 200 python3 -m pytest tests/collect/context/test_native_context_gpu.py -q -p no:cacheprovider --tb=short 2>&1 | tail -10
fi
if has bench; then
  python3 benchmarks/overhead.py --rounds ${ROUNDS:-5} --only ${ONLY:-launch_bound,gpu_bound} --json $OUT/overhead.json ${TOOLS:+--tools "$TOOLS"} 2>&1 | tail -${TAILN:-40}
fi
if has check; then
  # deuteron check on the GPU machine's Triton 3.6 and NumPy: the CPU suite, CUDA tensors, the overhead.
  python3 -c "import triton, numpy, torch; print('triton', triton.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
  timeout 300 python3 -m pytest tests/check/test_check.py -q -p no:cacheprovider 2>&1 | tail -5
  DEUTERON_TEST_GPU=1 timeout 200 python3 -m pytest tests/check/test_check_cuda_gpu.py -q -p no:cacheprovider 2>&1 | tail -5
  timeout 400 python3 benchmarks/check_overhead.py --launches ${LAUNCHES:-6} --no-check 2>&1 | tail -8
fi
if has explain; then
  # deuteron explain with real launches: driver-reported registers/spills/shared vs ours, the CPU suite on
  # the GPU machine's Triton, and the speed benchmark.
  python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__, torch.cuda.get_device_name())"
  DEUTERON_TEST_GPU=1 timeout 300 python3 -m pytest tests/explain/test_explain_gpu.py -q -p no:cacheprovider 2>&1 | tail -15
  timeout 400 python3 -m pytest tests/explain/test_explain.py tests/explain/test_explain_parsers.py -q -p no:cacheprovider --tb=short 2>&1 | grep -E "^E |Error|passed|failed" | tail -30
  python3 -m deuteron explain --json $OUT/explain_matmul.json tests/explain_corpus/matmul.py 2>&1 | tail -12
  timeout 400 python3 benchmarks/explain_speed.py --runs ${RUNS:-3} 2>&1 | tail -8
fi
if has real; then
  # Real kernels on a real GPU: the check corpus and the libdevice/bf16 suites on the machine's Triton,
  # Triton's own tutorials (copied under $SHARED/tutorials, never committed) under check, run and explain.
  python3 -c "import triton, numpy, torch; print('triton', triton.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
  timeout 300 python3 -m pytest tests/check/test_check_patterns.py tests/triton/interpreter/mends/test_bf16.py tests/triton/interpreter/mends/test_libdevice.py -q -p no:cacheprovider --tb=short 2>&1 | grep -E "^E |Error|error|passed|failed" | tail -${TAILN:-30}
  T=$(realpath "${SHARED:-../shared}/tutorials"); W=$(mktemp -d)
  for t in 08-grouped-gemm; do
    ( cd "$W" && /usr/bin/time -f "$t check: %e s" timeout 240 python3 -m deuteron check --json "$OUT/$t.check.json" "$T/$t.py" 2>&1 | tail -15; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print({k: r[k] for k in (\"launches\", \"programs\", \"kernels\", \"summary\")})" "$OUT/$t.check.json" )
  done
  [ -f "$T/08_compare.py" ] && ( cd "$W" && timeout 200 python3 -m deuteron check "$T/08_compare.py" 2>&1 | tail -8 )
  ( cd "$W" && timeout 200 python3 -m deuteron run -n mm "$T/03-matrix-multiplication.py" 2>&1 | tail -4 && python3 -m deuteron view mm.hatchet -m time/ms,count -d 3 2>&1 | head -30 && cp mm.hatchet "$OUT/" )
fi
if has proton; then
  # Proton's own test suite (fetched under $SHARED/proton_tests with only its imports pointed at
  # deuteron, never committed), GPU tests included; bin/ maps the proton commands to deuteron's.
  # test_api.py runs in a process of its own: it expects the process's first session to get id 0.
  P=$(realpath "${SHARED:-../shared}/proton_tests"); export PATH="$P/bin:$PATH"
  python3 -c "import hatchet" 2>&1 | tail -1
  for f in ${PTESTS:-test_profile.py test_cmd.py test_api.py}; do
    ( cd "$P" && timeout ${PTIMEOUT:-300} python3 -m pytest $f -q -p no:cacheprovider -rA --tb=short > "$OUT/proton_$f.log" 2>&1
      grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed" "$OUT/proton_$f.log" | cut -c1-200 | tail -${TAILN:-80} )
  done
fi
