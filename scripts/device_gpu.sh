#!/bin/bash
# Runs on the lent GPU machine (see docs/benchmarks.md): build the shim, GPU tests, fixtures, benchmarks.
# Usage: bash scripts/device_gpu.sh [smoke|tests|record|bench|all]   (results under $OUT)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
what=${1:-all}
python3 setup.py -q build_ext --inplace 2>&1 | tail -5
python3 -c "import deuteron.backends.cupti as c; print('shim:', c.unavailable_reason(), c.loaded_library())"
if [[ $what == smoke || $what == all ]]; then
  python3 - <<'PY'
import torch, deuteron.backends.cupti.library as L
print("after import torch, libcupti loaded:", L._loaded())
print("candidates:", [(s, str(p)) for s, p in L.candidates()][:4])
PY
  python3 - <<'PY'
import sys; import os; sys.path.insert(0, os.environ.get("SHARED", "../shared") + "/workloads")
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
if [[ $what == tests || $what == all ]]; then
  DEUTERON_TEST_GPU=1 timeout 400 python3 -m pytest tests/gpu -q -x -p no:cacheprovider 2>&1 | tail -40
fi
