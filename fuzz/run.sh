#!/usr/bin/env bash
# make fuzz SECONDS=N: builds the libFuzzer targets with clang in build-fuzz and runs each for N
# seconds, seeded as fuzz/targets.txt says (the malformed-file corpus, fuzz/seeds). JOBS=2 runs two
# targets at once; FUZZ_TARGETS="fuzz_npy …" picks some. A crash stops that target and leaves the
# input in build-fuzz/crashes/<target>/: copy it into tests/fuzz_regressions/<target>/, where the
# normal test suite replays it on every run (the <target>_replay tests, fuzz/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: fuzz/run.sh SECONDS}
jobs=${JOBS:-1}
build=${FUZZ_BUILD_DIR:-build-fuzz}

clangxx=$(command -v clang++ || true)
runtime=""
[ -n "$clangxx" ] && runtime=$("$clangxx" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
if [ -z "$clangxx" ] || [ ! -f "$runtime" ]; then
  echo "make fuzz needs clang with libFuzzer (Debian 12: apt-get install -y clang libclang-rt-dev libomp-dev)" >&2
  exit 1
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$clangxx" \
  -DCMAKE_C_COMPILER="$(command -v clang)" -DATTN_FUZZ=ON -DATTN_BUILD_CLI=OFF \
  -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_PYTHON=OFF -DATTN_INSTALL=OFF >/dev/null
cmake --build "$build" -j "${BUILD_JOBS:-$(nproc)}"

# Each target's seeds (fuzz/targets.txt) and the inputs that once crashed it.
seeds_of() {
  awk -v t="$1" '$1 == t { for (i = 2; i <= NF; ++i) print $i }' fuzz/targets.txt
  echo "tests/fuzz_regressions/$1"
}

all_targets=$(awk '/^fuzz_/ { print $1 }' fuzz/targets.txt)
targets=${FUZZ_TARGETS:-$all_targets}
mkdir -p "$build/logs"
run_one() {
  local t=$1 corpus="$build/corpus/$1" crashes="$build/crashes/$1"
  mkdir -p "$corpus" "$crashes"
  local seeds=()
  for d in $(seeds_of "$t"); do [ -d "$d" ] && seeds+=("$d"); done
  # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb: one that needs 2 GB is a
  # memory blow-up from a size taken on trust. Both count as crashes.
  nice -n 19 "$build/fuzz/$t" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" \
    >"$build/logs/$t.log" 2>&1
}

status=0
pids=()
names=()
for t in $targets; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || { echo "${names[0]}: CRASH, see $build/logs/${names[0]}.log" >&2; status=1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "${names[$i]}: CRASH, see $build/logs/${names[$i]}.log" >&2; status=1; }
done

# One line per target: executions, coverage (edges) and features, from libFuzzer's final stats.
printf '%-28s %12s %8s %8s %8s\n' target executions exec/s cov ft
for t in $targets; do
  log="$build/logs/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-28s %12s %8s %8s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}"
done
exit $status
