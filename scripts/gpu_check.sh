#!/usr/bin/env bash
# The checks of attn's CUDA kernels on a GPU machine, in one go (docs/GPU.md): the device tests
# against PyTorch, compute-sanitizer (memcheck, racecheck) on the CLI's forward and backward,
# and the benchmark against PyTorch's sdpa. Takes a folder holding a CUDA build's `attn` and
# `libattn_cuda.so` (optionally `attn_tests`, and any shared library they need that the machine
# lacks); writes logs to $OUT (default /tmp/attn-gpu); exits 1 when a check failed.
#   scripts/gpu_check.sh BUILD_FILES [quick]
set -uo pipefail
failed=()  # the checks that failed; the script exits 1 when any did
bin=$(cd "$1" && pwd)
quick=${2:-}
out=${OUT:-/tmp/attn-gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin:${LD_LIBRARY_PATH:-}" ATTN_BIN="$bin/attn" ATTN_CUDA_LIB="$bin/libattn_cuda.so"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$out/gpu.txt"

# attn train --device cuda: the steps against the CPU's (tests/cuda/test_train_cuda.py),
# compute-sanitizer on a small run of each word model, and the language model against its twin.
train_checks() {
  echo "== training on the GPU against the CPU"
  python3 -m pytest -q --tb=short -p no:cacheprovider -s tests/cuda/test_train_cuda.py > "$out/train_tests.log" 2>&1 \
    || failed+=("training tests")
  grep -E "worst|passed|failed|Error|error" "$out/train_tests.log" | tail -20
  local text="$out/sanitizer_text.txt"
  python3 -c "import random; r=random.Random(1); w='the a man dog runs sees big red house in on and old new'.split()
print('\n'.join(' '.join(r.choice(w) for _ in range(r.randint(3, 20))) + ' .' for _ in range(300)))" > "$text"
  for task in lm masked-word; do
    for tool in memcheck racecheck; do
      local shape="--learn-embeddings 64 --dim 64 --heads 2 --layers 2 --context 16 --vocab 50"
      [ $task = masked-word ] && shape="--layers 2 --heads 4"
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 "$bin/attn" train --task $task --data "$text" $shape \
        --batch 8 --max-tokens 400 --device cuda --dtype bf16 -o "$out/san.safetensors" > "$out/san_train_${task}_$tool.log" 2>&1
      local status=$?
      [ $status = 0 ] || failed+=("$tool train $task")
      echo "$tool train $task (bf16): exit $status $(grep -E 'SUMMARY' "$out/san_train_${task}_$tool.log")"
    done
  done
  rm -f "$out/san.safetensors" "$text"
  echo "== the language model against its PyTorch twin"
  python3 bench/gpu/train_lm_vs_torch.py --attn "$bin/attn" --data "${train_corpus}" --seconds "${train_seconds}" \
    --out "$out/lm" > "$out/train_bench.log" 2>&1 || failed+=("training benchmark")
  tail -25 "$out/train_bench.log"
}
if [ "$quick" = train ]; then
  train_seconds=${3:-60}
  train_corpus=${4:-gpudata/enwiki-100k.txt.xz}
  train_checks
  if [ ${#failed[@]} -gt 0 ]; then echo "FAILED: ${failed[*]}"; exit 1; fi
  echo "all checks passed"
  exit 0
fi
{ "$bin/attn" bench --device cuda 1,1024,8,64 4,512,8,128 --dtype bf16 --reps 5 && "$bin/attn" bench --device cuda --backward --dtype float16 --json 2,1000,4,64; } 2>&1 | tee "$out/smoke.txt" \
  || failed+=("smoke")

echo "== device tests"
python3 -m pytest -q --tb=line -p no:cacheprovider -s tests/cuda/test_cuda_kernels.py > "$out/tests.log" 2>&1 || failed+=("device tests")
tail -80 "$out/tests.log"

# each forward kernel: the mma.sync block shapes with each set of refinements on every D, and the
# wgmma kernel's key tiles with and without the overlap on D = 64 and 128 (ATTN_CUDA_FORWARD,
# ATTN_CUDA_FORWARD_VARIANT; src/cuda/flash_forward_launch.cu), bf16 and fp16 (8x2: bf16, where it is built)
for forced in 4x1:9 4x1:15 4x2:9 4x2:15 8x2:9 8x2:15 wgmma64 wgmma128 wgmma64-overlap wgmma128-overlap \
    wgmma64x1 wgmma64x3; do
  shape=${forced%:*} refine=${forced#*:}
  [ "$shape" = "$forced" ] && refine=
  echo "== device tests, forward $shape, refinements $refine"
  select="16 or dominate"
  [ $shape = 8x2 ] && select="bf16 or dominate"  # built for bf16 only
  ATTN_CUDA_FORWARD=$shape ATTN_CUDA_FORWARD_VARIANT=$refine python3 -m pytest -q --tb=line -p no:cacheprovider \
    -k "$select" tests/cuda/test_cuda_kernels.py > "$out/tests_${shape}_$refine.log" 2>&1 || failed+=("device tests, forward $forced")
  tail -3 "$out/tests_${shape}_$refine.log"
done

# the backward's kernels forced (ATTN_CUDA_BACKWARD: src/cuda/flash_dispatch.cu): mma.sync, and on
# Hopper the wgmma kernels with one warpgroup a block and with three for dQ
for forced in mma wgmma11 wgmma23; do
  echo "== device tests, backward $forced"
  ATTN_CUDA_BACKWARD=$forced python3 -m pytest -q --tb=line -p no:cacheprovider -k "16" tests/cuda/test_cuda_kernels.py \
    > "$out/tests_backward_$forced.log" 2>&1 || failed+=("device tests, backward $forced")
  tail -3 "$out/tests_backward_$forced.log"
done

if [ -x "$bin/attn_tests" ]; then  # the host API against float64 (tests/unit/test_cuda.cpp), when carried
  echo "== attn_tests (cuda)"
  "$bin/attn_tests" --gtest_filter='*cuda*' > "$out/unit.log" 2>&1 || failed+=("attn_tests cuda")
  tail -3 "$out/unit.log"
fi

echo "== compute-sanitizer"
python3 - "$out" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
for name, shape in (("q", (1, 4, 65, 64)), ("k", (1, 2, 130, 64)), ("v", (1, 2, 130, 64)), ("go", (1, 4, 65, 64)),
                    ("q7", (1, 2, 33, 7)), ("k7", (1, 2, 40, 7)), ("v7", (1, 2, 40, 7)), ("go7", (1, 2, 33, 7)),
                    ("q128", (1, 2, 200, 128)), ("k128", (1, 2, 200, 128)), ("v128", (1, 2, 200, 128)),
                    ("go128", (1, 2, 200, 128)), ("k300", (1, 2, 300, 128)), ("v300", (1, 2, 300, 128))):
    np.save(f"{sys.argv[1]}/{name}.npy", rng.standard_normal(shape).astype(np.float32))
np.save(f"{sys.argv[1]}/mask.npy", rng.standard_normal((65, 130)).astype(np.float32))
PY
for tool in memcheck racecheck; do
  for dt in bf16 float16 float32; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$bin/attn" sdpa --device cuda --dtype $dt --causal \
      --query "$out/q.npy" --key "$out/k.npy" --value "$out/v.npy" --attn-mask "$out/mask.npy" -o "$out/o.npy" \
      --grad-output "$out/go.npy" --dq "$out/dq.npy" --dk "$out/dk.npy" --dv "$out/dv.npy" > "$out/san_${tool}_${dt}.log" 2>&1
    status=$?
    [ $status = 0 ] || failed+=("$tool $dt")
    echo "$tool $dt (D=64, mask, causal, GQA, fwd+bwd): exit $status $(grep -E 'ERROR SUMMARY' "$out/san_${tool}_${dt}.log")"
  done
  for D in 64 128 128w 128x8 128x1; do  # no mask: the interior tiles' folded path (on Hopper 64 and 128
    # run the wgmma kernel, 128w its two-warpgroup shape with tiles of 128; mma.sync: 128x8 8 warps,
    # 128x1 one tile a warp with every refinement, causal, as small causal D = 128 runs)
    [ $D = 64 ] && set -- q k v go || set -- q128 k128 v128 go128
    unset ATTN_CUDA_FORWARD ATTN_CUDA_FORWARD_VARIANT
    causal=
    [ $D = 128w ] && export ATTN_CUDA_FORWARD=wgmma128
    [ $D = 128x8 ] && export ATTN_CUDA_FORWARD=8x2
    [ $D = 128x1 ] && export ATTN_CUDA_FORWARD=4x1 ATTN_CUDA_FORWARD_VARIANT=15 && causal=--causal
    compute-sanitizer --tool $tool --error-exitcode 9 "$bin/attn" sdpa --device cuda --dtype bf16 \
      --query "$out/$1.npy" --key "$out/$2.npy" --value "$out/$3.npy" -o "$out/o.npy" $causal \
      --grad-output "$out/$4.npy" --dq "$out/dq.npy" --dk "$out/dk.npy" --dv "$out/dv.npy" > "$out/san_${tool}_plain$D.log" 2>&1
    status=$?
    unset ATTN_CUDA_FORWARD ATTN_CUDA_FORWARD_VARIANT
    [ $status = 0 ] || failed+=("$tool bf16 D=$D plain")
    echo "$tool bf16 (D=$D, no mask${causal:+, causal}, fwd+bwd): exit $status $(grep -E 'ERROR SUMMARY' "$out/san_${tool}_plain$D.log")"
  done
  for causal in "" --causal; do  # float16, D = 128, L = 200 against S = 300: on Hopper the wgmma
    # kernels' edges (a last key tile and a last query block part full), forward and backward
    compute-sanitizer --tool $tool --error-exitcode 9 "$bin/attn" sdpa --device cuda --dtype float16 $causal \
      --query "$out/q128.npy" --key "$out/k300.npy" --value "$out/v300.npy" -o "$out/o.npy" \
      --grad-output "$out/go128.npy" --dq "$out/dq.npy" --dk "$out/dk.npy" --dv "$out/dv.npy" > "$out/san_${tool}_300$causal.log" 2>&1
    status=$?
    [ $status = 0 ] || failed+=("$tool float16 D=128 S=300 $causal")
    echo "$tool float16 (D=128, L=200, S=300${causal:+, causal}, fwd+bwd): exit $status $(grep -E 'ERROR SUMMARY' "$out/san_${tool}_300$causal.log")"
  done
  compute-sanitizer --tool $tool --error-exitcode 9 "$bin/attn" sdpa --device cuda --dtype bf16 \
    --query "$out/q7.npy" --key "$out/k7.npy" --value "$out/v7.npy" -o "$out/o7.npy" \
    --grad-output "$out/go7.npy" --dq "$out/dq7.npy" --dk "$out/dk7.npy" --dv "$out/dv7.npy" > "$out/san7.log" 2>&1
  status=$?
  [ $status = 0 ] || failed+=("$tool bf16 D=7")
  echo "$tool bf16 (D=7, CUDA cores, fwd+bwd): exit $status $(grep -E 'ERROR SUMMARY' "$out/san7.log")"
done
rm -f "$out"/*.npy

report() {
  if [ ${#failed[@]} -gt 0 ]; then echo "FAILED: ${failed[*]}"; exit 1; fi
  echo "all checks passed"
}
[ "$quick" = quick ] && report
echo "== the forward's block shapes and refinements"
# shape:refinements or a wgmma variant (ATTN_CUDA_FORWARD, ATTN_CUDA_FORWARD_VARIANT: src/cuda/flash_forward_launch.cu);
# "choice" is the launch's own choice, :0 the kernel's first version. Two passes, interleaved, so
# that a drift of the clocks shows as a difference between passes.
for pass in 1 2; do
  for forced in choice 4x1:0 4x2:0 4x1:9 4x1:15 4x2:9 4x2:15 8x2:9 8x2:15 wgmma64 wgmma128 \
      wgmma64-overlap wgmma128-overlap wgmma64x1 wgmma64x3; do
    shape=${forced%:*} refine=${forced#*:}
    [ "$shape" = "$forced" ] && refine=
    [ $forced = choice ] && shape= refine=
    for causal in "" --causal; do
      ATTN_CUDA_FORWARD=$shape ATTN_CUDA_FORWARD_VARIANT=$refine "$bin/attn" bench --device cuda --dtype bf16 \
        --reps 20 $causal 1,4096,16,128 4,2048,16,64 8,1024,32,128 2>&1 | sed "s/^/pass$pass $forced /"
    done
  done
  for every in 1 0; do  # the backward: every pair checked (its first version) against interior tiles folded
    for causal in "" --causal; do
      ATTN_CUDA_BACKWARD_EVERY_PAIR=$every "$bin/attn" bench --device cuda --dtype bf16 --backward \
        --reps 30 $causal 1,4096,16,128 4,2048,16,64 8,1024,32,128 2>&1 | sed "s/^/pass$pass backward every_pair=$every /"
    done
  done
done | tee "$out/variants.txt" | sed 's/(cuda: .*//'
train_seconds=60
train_corpus=gpudata/enwiki-100k.txt.xz
train_checks
echo "== benchmark"
python3 bench/gpu/sdpa_vs_torch.py --reps 20 --json "$out/bench.jsonl" 2>&1 | tee "$out/bench.txt" || failed+=("benchmark")
report
