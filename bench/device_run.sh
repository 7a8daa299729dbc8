#!/usr/bin/env bash
# One GPU-machine session: install the carried wheels, build the full-size random checkpoint, then run
# the named steps, each under its own time limit. Logs go under $OUT (or ./device-out): run.log (machine,
# environment, build, step timings) plus each step's own files.
#   bench/device_run.sh tests snake bench     (steps: tests, levers, snake, levers-compile, bench, bench-fp32, speed, coldstart)
# Run from the repository root with .whl/ carried (see ../shared/device/wheels.sh).
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
LOG="$OUT/run.log"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CODEC_FULL_CHECKPOINT=${CODEC_FULL_CHECKPOINT:-/tmp/full}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"
  echo "PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF-<unset>}"; env | grep -E '^(PYTORCH|CUDA_)' ; } >> "$LOG" 2>&1
start=$(date +%s)
if [ ! -f "$CODEC_FULL_CHECKPOINT/config.json" ]; then
  python3 -c "from core.checkpoints import build_full_checkpoint as b; b('$CODEC_FULL_CHECKPOINT', reference='bench/reference-config.json')" >> "$LOG" 2>&1
fi
echo "checkpoint ready after $(( $(date +%s) - start )) s" | tee -a "$LOG"
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    tests) timeout 170 python3 -m pytest -v -s -m gpu tests/gpu -p no:cacheprovider > "$OUT/gpu-tests.txt" 2>&1 ;;
    levers) timeout 120 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/levers.log" 2>&1 ;;
    snake) timeout 90 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --snake-only > "$OUT/levers-snake.log" 2>&1 ;;
    levers-compile) timeout 150 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --compile > "$OUT/levers.log" 2>&1 ;;
    bench) timeout 420 python3 -m bench.codec_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/bench.log" 2>&1 ;;
    speed) timeout 240 python3 -m bench.speed_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --lengths 10,60,600 --out "$OUT" > "$OUT/speed.log" 2>&1 ;;
    coldstart) python3 -m compileall -q -j 0 /tmp/site . > /dev/null 2>&1; timeout 90 python3 -m bench.cold_start --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/cold_start.log" 2>&1 ;;
    bench-fp32) timeout 240 python3 -m bench.codec_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --dtypes float32 > "$OUT/bench.log" 2>&1 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "$step: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
done
