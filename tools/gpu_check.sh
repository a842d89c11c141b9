#!/usr/bin/env bash
# tools/gpu_check.sh [BIN_DIR] [OUT_DIR]: on a machine with a GPU, every
# check ../shared/docs/GPU_CHECKLIST.md asks for that has a binary, one
# after another, then a summary line per check. BIN_DIR holds the binaries
# (a gpu_bundle.sh bundle's bin/, or bazel-bin's; default: the bundle's
# bin/ beside this script, else bazel-bin). Logs go to OUT_DIR
# (default ./gpu-check).
#
#   . ./env.sh && tools/gpu_check.sh bin /tmp/gpu-check
# Exit: 0 when every check that ran passed, 1 otherwise; a check whose
# binary is missing is "not run".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-}
if [ -z "$bin" ]; then
  if [ -d "$ROOT/bin" ]; then bin=$ROOT/bin; else bin=$ROOT/bazel-bin; fi
fi
out=${2:-gpu-check}
device=${HPT_CHECK_DEVICE:-cuda:0}
mkdir -p "$out"
summary=()
failed=0

# find NAME: the binary's path under $bin (flat bundle or bazel-bin tree).
find_binary() {
  local name=$1
  [ -x "$bin/$name" ] && { echo "$bin/$name"; return; }
  find "$bin" -maxdepth 3 -type f -name "$name" -perm -u+x 2>/dev/null | head -n 1
}

# check LABEL BINARY ARGS...: runs it, logs to $out/LABEL.log, records a line.
check() {
  local label=$1 name=$2
  shift 2
  local path
  path=$(find_binary "$name")
  if [ -z "$path" ]; then
    summary+=("not run  $label ($name not in $bin)")
    return
  fi
  echo "== $label: $name $*" | tee "$out/$label.log"
  local start=$SECONDS
  if "$path" "$@" 2>&1 | tee -a "$out/$label.log"; then
    summary+=("passed   $label ($((SECONDS - start)) s)")
  else
    summary+=("FAILED   $label ($((SECONDS - start)) s, see $out/$label.log)")
    failed=1
  fi
}

# HPT_CALIBRATE_QUICK=1: the quick calibration (the CPU twin's; a GPU's
# check wants the full one).
check calibrate hpt_calibrate --device="$device" --out="$out/gpu.profile" \
  ${HPT_CALIBRATE_QUICK:+--quick}
check model-vs-h100 gpu_model_check --gpu=h100
if [ -s "$out/gpu.profile" ]; then
  # This GPU's own profile against issue 32's H100 table (meaningful on an
  # H100), then against this GPU's own steps, timed by the baseline probe.
  check profile-vs-h100-table gpu_model_check --gpu="$out/gpu.profile"
  check profile-vs-this-gpu gpu_model_check --gpu="$out/gpu.profile" --measure_on="$device" \
    --batches=1,32 --steps="${HPT_PROBE_STEPS:-20}" --warm_up="${HPT_PROBE_WARM_UP:-3}"
fi
# The baseline probe (paper, fused, graph, bf16 run for real); a CPU twin
# shortens it with HPT_PROBE_STEPS and HPT_PROBE_WARM_UP.
probe_steps=(--steps="${HPT_PROBE_STEPS:-20}" --warm_up="${HPT_PROBE_WARM_UP:-3}")
check probe-wind-b1 hpt_probe --device="$device" --preset=wind --batch=1 "${probe_steps[@]}"
check probe-wind-b32 hpt_probe --device="$device" --preset=wind --batch=32 "${probe_steps[@]}"
check cuda-tests cuda_test
check step-overhead-b1 step_overhead_bench --device="$device" --batch=1
check step-overhead-b32 step_overhead_bench --device="$device" --batch=32
check attention attention_bench --device="$device" --precision=both
check cpu-profile cpu_profile_check

echo
echo "gpu_check summary ($device, logs in $out):"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$failed"
