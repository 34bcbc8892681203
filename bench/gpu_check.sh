#!/usr/bin/env bash
# The device check, in one run on a lent GPU machine (issue 35): the GPU tests, then the benchmark.
# Here first: `bash ../shared/gpu/prepare.sh` (makes .devkit/); then the device tool, carry [".devkit"],
# command `bash bench/gpu_check.sh`, a timeout of 540 s. Logs go to $OUT (the files that come back).
# Budget: tests ~2-3 min with -n 12, bench ~4 min at the default --models, within the 8 minutes asked.
set -u
out=${OUT:-gpu_check_logs}
mkdir -p "$out"
start=$(date +%s)
env=(bash .devkit/gpu_env.sh)
"${env[@]}" python3 -m pytest -q -n 12 -p no:cacheprovider tests/gpu -k "on_the_gpu" >"$out/tests.log" 2>&1
echo "tests rc=$? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
# what is left of 8 minutes, less a margin for the copy back
left=$(( 480 - ($(date +%s) - start) - 20 ))
[ "$left" -gt 60 ] || left=60
timeout "$left" "${env[@]}" python3 bench/bench_gpu.py --precision both --rounds 5 --calls 20 \
  >"$out/bench.log" 2>&1
echo "bench rc=$? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
tail -n 30 "$out/tests.log" "$out/bench.log"
