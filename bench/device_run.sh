#!/usr/bin/env bash
# One GPU-machine session: install the carried wheels, build the full-size random checkpoint, then run
# the named steps, each under its own time limit. Logs go under $OUT (or ./device-out): run.log (machine,
# environment, build, step timings) plus each step's own files.
#   bench/device_run.sh tests snake bench     (steps: tests, levers, snake, levers-compile, bench, bench-fp32, speed, profile, pyc, importtime, coldstart,
#                                              finetune-all, live48, live24, layout)
# Run from the repository root with .whl/ carried (see ../shared/device/wheels.sh).
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
LOG="$OUT/run.log"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CODEC_FULL_CHECKPOINT=${CODEC_FULL_CHECKPOINT:-/tmp/full}
export CODEC_FULL_CHECKPOINT_48K=${CODEC_FULL_CHECKPOINT_48K:-/tmp/full48}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"
  echo "PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF-<unset>}"; env | grep -E '^(PYTORCH|CUDA_)' ; } >> "$LOG" 2>&1
start=$(date +%s)
if [ ! -f "$CODEC_FULL_CHECKPOINT/config.json" ]; then
  python3 -c "from core.model.checkpoints import build_full_checkpoint as b; b('$CODEC_FULL_CHECKPOINT', reference='core/model/reference-config.json')" >> "$LOG" 2>&1
fi
if [ ! -f "$CODEC_FULL_CHECKPOINT_48K/config.json" ]; then  # the family's 48 kHz recipe
  python3 -c "from core.model.checkpoints import build_full_checkpoint as b; b('$CODEC_FULL_CHECKPOINT_48K', reference='core/model/reference-config.json', output_rate_hz=48000)" >> "$LOG" 2>&1
fi
echo "checkpoints ready after $(( $(date +%s) - start )) s" | tee -a "$LOG"
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    tests) timeout 260 python3 -m pytest -v -s -m gpu tests/gpu -p no:cacheprovider > "$OUT/gpu-tests.txt" 2>&1 ;;
    levers) timeout 120 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/levers.log" 2>&1 ;;
    snake) timeout 90 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --snake-only > "$OUT/levers-snake.log" 2>&1 ;;
    levers-compile) timeout 150 python3 -m bench.levers --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --compile > "$OUT/levers.log" 2>&1 ;;
    bench) timeout 420 python3 -m bench.codec_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/bench.log" 2>&1 ;;
    speed) timeout 240 python3 -m bench.speed_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --lengths ${SPEED_LENGTHS:-10,600} --out "$OUT" > "$OUT/speed.log" 2>&1 ;;
    profile) timeout 120 python3 -m bench.decode_profile --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" > "$OUT/decode_profile.log" 2>&1 ;;
    importtime) python3 -X importtime -m core check --model "$CODEC_FULL_CHECKPOINT" --device cuda:0 > /dev/null 2> "$OUT/importtime.txt"
                awk -F'|' '/import time:/ {gsub(/ /,"",$2); print $2, $3}' "$OUT/importtime.txt" | sort -n -r | head -60 > "$OUT/importtime-top.txt" ;;
    pyc) # bytecode for every importable package, as pip leaves an install; this image writes none itself
         # (PYTHONDONTWRITEBYTECODE) and ships without it, so it goes to a prefix that later steps read
         export PYTHONPYCACHEPREFIX=/tmp/pyc
         python3 -m compileall -q -j 0 $(python3 -c "import sys; print(' '.join(p for p in sys.path if p.startswith('/') and not p.endswith('.zip')))") . > /dev/null 2>&1
         echo "pyc: $(find /tmp/pyc -name '*.pyc' | wc -l) files under $PYTHONPYCACHEPREFIX" >> "$LOG" ;;
    coldstart) python3 -m compileall -q -j 0 /tmp/site . > /dev/null 2>&1; timeout 120 python3 -m bench.cold_start --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --note "${COLD_NOTE:-}" > "$OUT/cold_start.log" 2>&1 ;;
    bench-fp32) timeout 240 python3 -m bench.codec_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --out "$OUT" --dtypes float32 > "$OUT/bench.log" 2>&1 ;;
    finetune-all) timeout 200 python3 -m bench.finetune_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --device cuda:0 --shapes 4x30,16x10 --steps 3 --only "one segment" --out "$OUT" > "$OUT/finetune_all.log" 2>&1 ;;
    live48) timeout 200 python3 -m bench.live_bench --checkpoint "$CODEC_FULL_CHECKPOINT_48K" --device cuda:0 --sessions 1,4,16,32 --variants batched --tag=-48k --out "$OUT" > "$OUT/live48.log" 2>&1 ;;
    live24) timeout 200 python3 -m bench.live_bench --checkpoint "$CODEC_FULL_CHECKPOINT" --device cuda:0 --sessions 1,4,16,32 --variants batched --tag=-24k-beside-48k --out "$OUT" > "$OUT/live24.log" 2>&1 ;;
    layout) timeout 300 python3 -m bench.tokenize_layout --clips ${LAYOUT_CLIPS:-512} --out "$OUT" > "$OUT/tokenize_layout.log" 2>&1 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "$step: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
done
