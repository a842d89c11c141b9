#!/usr/bin/env bash
# tools/gpu_check.sh [BIN_DIR] [OUT_DIR]: on a machine with a GPU, every
# check ../shared/docs/GPU_CHECKLIST.md asks for that has a binary, one
# after another, then a summary line per check. BIN_DIR holds the binaries
# (a gpu_bundle.sh bundle's bin/, or bazel-bin's; default: the bundle's
# bin/ beside this script, else bazel-bin). Logs go to OUT_DIR
# (default ./gpu-check). HPT_CHECK_TIMEOUT_S bounds each check (600 s);
# HPT_CHECK_BOUNDS=0 lets the model checks on this device print without
# failing. HPT_CHECK_DATA names the real data sets' folder, for a whole
# HpT job on the wind data (wind-hpt-job; not run without it). HPT_CHECK_ONLY="LABEL
# ..." runs those checks alone (a check that reads the calibration's
# profile wants calibrate beside it). HPT_CHECK_BATCHES="1 32" (the
# default) are the batch sizes of the step checks: the model against
# this device's steps, the baseline probe and the step overhead.
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
# Absolute: cuda_test's runfiles tree links to the binaries from elsewhere.
bin=$(cd "$bin" && pwd)
out=${2:-gpu-check}
device=${HPT_CHECK_DEVICE:-cuda:0}
limit=${HPT_CHECK_TIMEOUT_S:-600}  # seconds a check may run
data=${HPT_CHECK_DATA:-}           # the real data sets' folder (wind/winds.dat)
only=${HPT_CHECK_ONLY:-}           # these checks alone (labels, space-separated)
batches=${HPT_CHECK_BATCHES:-1 32} # batch sizes of the step checks (space-separated)
# The model checks against this device fail when a row is outside its
# bound; HPT_CHECK_BOUNDS=0 prints the rows only (a CPU twin's quick
# calibration is no model to hold to them).
bounds=()
[ "${HPT_CHECK_BOUNDS:-1}" = 0 ] || bounds=(--check)
mkdir -p "$out"
summary=()
failed=0

# find NAME: the binary's path under $bin (flat bundle or bazel-bin tree).
find_binary() {
  local name=$1
  [ -x "$bin/$name" ] && { echo "$bin/$name"; return; }
  find "$bin" -maxdepth 3 -type f -name "$name" -perm -u+x 2>/dev/null | head -n 1
}

# logged LABEL COMMAND...: runs it under the check timeout, logs to
# $out/LABEL.log, records a summary line.
logged() {
  local label=$1
  shift
  case " ${only:-$label} " in *" $label "*) ;; *) return ;; esac
  echo "== $label: $*" | tee "$out/$label.log"
  local start=$SECONDS rc=0
  # A function (wind_job) runs in a bash of its own, so that the timeout
  # stops it and every process it started.
  if declare -F "$1" >/dev/null; then
    timeout --kill-after=10 "$limit" bash -c '"$@"' _ "$@" 2>&1 | tee -a "$out/$label.log"
  else
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$out/$label.log"
  fi
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then
    summary+=("passed   $label ($((SECONDS - start)) s)")
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    summary+=("FAILED   $label (over its ${limit} s, see $out/$label.log)")
    failed=1
  else
    summary+=("FAILED   $label ($((SECONDS - start)) s, exit $rc, see $out/$label.log)")
    failed=1
  fi
}

# check LABEL BINARY ARGS...: the binary, logged; "not run" where it is
# missing.
check() {
  local label=$1 name=$2
  shift 2
  local path
  path=$(find_binary "$name")
  if [ -z "$path" ]; then
    summary+=("not run  $label ($name not in $bin)")
    return
  fi
  logged "$label" "$path" "$@"
}

# wind_job: a whole HpT job on $device beside a ReRAM and a systolic
# worker, the wind preset (12 layers, d_model 512) on the real wind data,
# through its switch; then its report (where each phase's tasks ran, the
# measured baselines). One epoch of 40 steps (HPT_JOB_EPOCHS,
# HPT_JOB_STEPS): the LoRA phase runs on the simulated devices, whose
# numerics are the CPU's (on an H200's host, 2026-11-29: 4.5 samples a
# second at batch 16, so two epochs ran past 180 s). Processes stop with
# the check.
wind_job() {
  local dir=$out/wind-job pids=() port
  rm -rf "$dir" && mkdir -p "$dir"  # no port file of an earlier run
  trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' RETURN
  # start NAME ARGS...: started in the background; its gRPC port in $port.
  start() {
    local name=$1
    shift
    "$@" --listen=127.0.0.1:0 --metrics=127.0.0.1:0 --port_file="$dir/$name.port" \
      >"$dir/$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 600); do
      if [ -s "$dir/$name.port" ]; then
        port=$(sed -E 's/grpc=([0-9]+).*/\1/' "$dir/$name.port")
        return 0
      fi
      kill -0 "${pids[-1]}" 2>/dev/null || break
      sleep 0.1
    done
    echo "$name did not start; its log:" && cat "$dir/$name.log"
    return 1
  }
  local coordinator
  start coordinator "$(find_binary hpt_coordinator)" --http= --no_state --data_root="$data" \
    || return 1
  coordinator=$port
  start gpu "$(find_binary hpt_worker)" --kind=gpu --device="$device" \
    --coordinator=127.0.0.1:$coordinator || return 1
  start reram "$(find_binary hpt_worker)" --kind=reram --coordinator=127.0.0.1:$coordinator \
    || return 1
  start systolic "$(find_binary hpt_worker)" --kind=systolic --coordinator=127.0.0.1:$coordinator \
    || return 1
  # The paper's split of the wind data (test rows 480-2120); the demo's
  # small check windows and loose thresholds, so a short job switches.
  local ctl=("$(find_binary hptctl)" --coordinator=127.0.0.1:$coordinator)
  # The job ends 20 s inside the check's limit, so that a stuck job leaves
  # its state and where each process waits (hung_report).
  timeout $((limit > 40 ? limit - 20 : limit)) "${ctl[@]}" submit --name=gpu-check-wind \
    --preset=wind --csv="$(cd "$data" && pwd)/wind/winds.dat" \
    --train_rows=0:480,2120:8387 --test_rows=480:2120 --input_steps=12 \
    --epochs="${HPT_JOB_EPOCHS:-1}" --batch_size=16 --max_steps_per_epoch="${HPT_JOB_STEPS:-40}" \
    --switch_rule=paper --check_window_steps=5 --loss_threshold=0.5 --weight_threshold=0.5 \
    --probe_steps=10 --watch || { hung_report "${ctl[@]}"; return 1; }
  "${ctl[@]}" report job-000001
}

# hung_report HPTCTL...: after a job did not end, its state and, for each
# of the check's processes, its log's end and what each thread waits in
# (the kernel's wait channel and system call).
hung_report() {
  echo "== the job did not end; its state:"
  "$@" status job-000001
  local pid task
  for pid in "${pids[@]}"; do
    echo "== process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)"
    for task in /proc/"$pid"/task/*; do
      echo "  thread $(basename "$task") $(cat "$task/comm" 2>/dev/null):" \
        "wchan $(cat "$task/wchan" 2>/dev/null)," \
        "syscall $(cut -d' ' -f1 "$task/syscall" 2>/dev/null)"
    done
  done
  tail -n 20 "$dir"/*.log
  # Where a CUDA machine has cuda-gdb (it debugs host code too): each
  # process's threads' stacks, the deepest frames first.
  if command -v cuda-gdb >/dev/null; then
    for pid in "${pids[@]}"; do
      echo "== stacks of process $pid"
      timeout 60 cuda-gdb -p "$pid" -batch -ex 'thread apply all bt 14' 2>&1 \
        | grep -E '^(Thread|#)' | cut -c1-220 | head -n 400
    done
  fi
}

# HPT_CALIBRATE_QUICK=1: the quick calibration (the CPU twin's; a GPU's
# check wants the full one).
check calibrate hpt_calibrate --device="$device" --out="$out/gpu.profile" \
  ${HPT_CALIBRATE_QUICK:+--quick}
check model-vs-h100 gpu_model_check --gpu=h100 "${bounds[@]}"
# Single kernels of shapes the calibration never times (benchmarks/
# kernel_holdout_cases.h), measured here, then priced on this GPU's fresh
# profile (per class, median error within 15 %) and, printed beside it
# unchecked, on the h100 preset: the GH100 processor of the H100 and H200
# these checks are lent, whose bandwidth is the H100's, so an H200 is
# faster than it. The v100 and a100 presets price other boards.
check kernel-holdout kernel_holdout --measure_on="$device" --out="$out/kernel-holdout.csv"
if [ -s "$out/kernel-holdout.csv" ]; then
  [ -s "$out/gpu.profile" ] && check kernel-holdout-model kernel_holdout \
    --measured="$out/kernel-holdout.csv" --gpu="$out/gpu.profile" "${bounds[@]}"
  check kernel-holdout-h100 kernel_holdout --measured="$out/kernel-holdout.csv" --gpu=h100
  # The fresh profile without its layer norm and softmax grids, printed
  # unchecked: those kernels priced by their traffic, as the datasheet
  # presets price them (a softmax row read once or three times by the
  # kernel LibTorch picks: devices/gpu/kernel_cost.cc), which the held-out
  # softmax rows 2,560 to 12,800 wide test.
  if [ -s "$out/gpu.profile" ]; then
    grep -v -E '^(norm|norm_backward|softmax|softmax_backward)_grid *=' "$out/gpu.profile" \
      >"$out/gpu-rows-by-traffic.profile"
    check kernel-holdout-rows-by-traffic kernel_holdout --measured="$out/kernel-holdout.csv" \
      --gpu="$out/gpu-rows-by-traffic.profile"
  fi
fi
if [ -s "$out/gpu.profile" ]; then
  # This GPU's own profile against the measured H100 table (meaningful on an
  # H100), then against this GPU's own steps, timed by the baseline probe.
  check profile-vs-h100-table gpu_model_check --gpu="$out/gpu.profile"
  check profile-vs-this-gpu gpu_model_check --gpu="$out/gpu.profile" --measure_on="$device" \
    "${bounds[@]}" --batches="$(echo $batches | tr ' ' ,)" --steps="${HPT_PROBE_STEPS:-20}" \
    --warm_up="${HPT_PROBE_WARM_UP:-3}"
fi
# The baseline probe (paper, fused, graph, bf16 run for real); a CPU twin
# shortens it with HPT_PROBE_STEPS and HPT_PROBE_WARM_UP.
probe_steps=(--steps="${HPT_PROBE_STEPS:-20}" --warm_up="${HPT_PROBE_WARM_UP:-3}")
for b in $batches; do
  check "probe-wind-b$b" hpt_probe --device="$device" --preset=wind --batch="$b" "${probe_steps[@]}"
done
# cuda_test finds the service's binaries as Bazel runfiles; from a bundle,
# a runfiles tree of links to $bin.
if [ -z "${TEST_SRCDIR:-}" ] && [ -x "$bin/hpt_coordinator" ]; then
  mkdir -p "$out/runfiles/hpt/coordinator" "$out/runfiles/hpt/workers/main" "$out/runfiles/hpt/hptctl"
  ln -sf "$bin/hpt_coordinator" "$out/runfiles/hpt/coordinator/hpt_coordinator"
  ln -sf "$bin/hpt_worker" "$out/runfiles/hpt/workers/main/hpt_worker"
  ln -sf "$bin/hptctl" "$out/runfiles/hpt/hptctl/hptctl"
  export TEST_SRCDIR=$(cd "$out/runfiles" && pwd) TEST_WORKSPACE=hpt
fi
check cuda-tests cuda_test
worker=$(find_binary hpt_worker)
# Timed steps a side: a GPU step of a few milliseconds needs 40 to stand
# above what a job costs once; the CPU twin's wind step is 0.13 s.
overhead_default=40
[ "$device" = cpu ] && overhead_default=5
overhead_steps=--steps="${HPT_OVERHEAD_STEPS:-$overhead_default}"
for b in $batches; do
  check "step-overhead-b$b" step_overhead_bench --device="$device" --batch="$b" "$overhead_steps" \
    --worker_binary="$worker"
done
# The same under bf16 autocast, and with training.launch: graph against the
# in-process step captured once and replayed.
for b in $batches; do
  check "step-overhead-bf16-b$b" step_overhead_bench --device="$device" --batch="$b" \
    --precision=bf16 "$overhead_steps" --worker_binary="$worker"
  check "step-overhead-graph-b$b" step_overhead_bench --device="$device" --batch="$b" \
    --launch=graph "$overhead_steps" --worker_binary="$worker"
  check "step-overhead-graph-bf16-b$b" step_overhead_bench --device="$device" --batch="$b" \
    --launch=graph --precision=bf16 "$overhead_steps" --worker_binary="$worker"
done
check attention attention_bench --device="$device" --precision=both
if [ -n "$data" ]; then
  if [ -r "$data/wind/winds.dat" ] && [ -n "$(find_binary hpt_coordinator)" ]; then
    export -f wind_job hung_report find_binary
    export out data device bin limit
    logged wind-hpt-job wind_job
  else
    summary+=("not run  wind-hpt-job (no $data/wind/winds.dat, or no hpt_coordinator in $bin)")
  fi
fi
check cpu-profile cpu_profile_check

echo
echo "gpu_check summary ($device, logs in $out):"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$failed"
