#!/usr/bin/env bash
# One GPU-machine session: install the carried wheels, build the full-size random checkpoint, then run
# the named steps, each under its own time limit, logging under $OUT (or ./device-out).
#   bench/device_run.sh tests levers bench            (steps: tests, levers, levers-compile, bench, bench-fp32)
# Run from the repository root with .whl/ carried (see ../shared/device/wheels.sh).
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CODEC_FULL_CHECKPOINT=${CODEC_FULL_CHECKPOINT:-/tmp/full}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; python3 -c "import torch; print(torch.__version__, torch.backends.cudnn.version())"; } > "$OUT/machine.txt" 2>&1
start=$(date +%s)
if [ ! -f "$CODEC_FULL_CHECKPOINT/config.json" ]; then
  python3 -c "from core.checkpoints import build_full_checkpoint as b; b('$CODEC_FULL_CHECKPOINT', reference='bench/reference-config.json')" > "$OUT/build.log" 2>&1
fi
echo "checkpoint ready after $(( $(date +%s) - start )) s" | tee -a "$OUT/steps.log"
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    tests) timeout 170 python3 -m pytest -v -s -m gpu tests/gpu -p no:cacheprovider > "$OUT/gpu-tests.txt" 2>&1 ;;
    levers) timeout 120 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/levers.log" 2>&1 ;;
    levers-compile) timeout 150 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --compile > "$OUT/levers.log" 2>&1 ;;
    bench) timeout 420 python3 -m bench.codec_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/bench.log" 2>&1 ;;
    bench-fp32) timeout 240 python3 -m bench.codec_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --dtypes float32 > "$OUT/bench.log" 2>&1 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "$step: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
done
