#!/usr/bin/env bash
# tools/gpu_bundle.sh, unpacked into an empty folder: every library its
# binaries load resolves from the bundle, this machine's LibTorch or the C
# runtime, and with nothing else on the library path (env -i) a coordinator,
# a GPU worker and hptctl from it train a tiny job to its end.
#   gpu_bundle_test.sh BUNDLE_SCRIPT COORDINATOR WORKER HPTCTL DEVSIM [MORE BINARIES]
set -euo pipefail
script=$1
shift
tmp=${TEST_TMPDIR:-$(mktemp -d)}
bash "$script" --no-build --binaries "$(IFS=,; echo "$*")" "$tmp/hpt-gpu.tar.xz"
rm -rf "$tmp/unpacked" && mkdir "$tmp/unpacked"
tar -C "$tmp/unpacked" -xJf "$tmp/hpt-gpu.tar.xz"
B=$tmp/unpacked/hpt
python=${HPT_VENV:?set HPT_VENV to the venv ./hpt setup made (./hpt test passes it)}/bin/python3
torchlib=$("$python" -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "lib"))')
paths=$B/lib:$torchlib

# fail REASON [DETAILS]: the details (a log), then the reason, last, where
# the end of a CI log shows it.
fail() {
  [ $# -lt 2 ] || printf '%s\n' "$2" >&2
  echo "gpu_bundle_test: $1" >&2
  exit 1
}
for b in hpt_coordinator hpt_worker hptctl hpt_devsim; do
  [ -x "$B/bin/$b" ] || fail "bin/$b missing from the bundle"
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [ "$path" != "not" ] || fail "$b: $name not found with LD_LIBRARY_PATH=$paths"
    case "$path" in
      "$B"/lib/*|*/torch/lib/*|*/nvidia/*) ;;
      */libc.so*|*/libm.so*|*/libpthread.so*|*/libdl.so*|*/librt.so*|*/libgcc_s.so*|*/libstdc++.so*) ;;
      *) fail "$b: $name resolves to $path, outside the bundle" ;;
    esac
  done < <(env -i LD_LIBRARY_PATH="$paths" ldd "$B/bin/$b")
done
[ -e "$B/lib/libblas.so.3" ] || fail "OpenBLAS (opened by name at run time) is not in the bundle"
echo "every library resolves from the bundle, LibTorch or the C runtime"

run() { env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$paths" "$@"; }
run "$B/bin/hpt_coordinator" --listen=127.0.0.1:0 --metrics= --http= --no_state \
  --port_file="$tmp/c.port" >"$tmp/coordinator.log" 2>&1 &
coordinator=$!
trap 'kill $coordinator ${worker:-} 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do [ -s "$tmp/c.port" ] && break; sleep 0.1; done
port=$(sed -E 's/grpc=([0-9]+).*/\1/' "$tmp/c.port")
[ -n "$port" ] || fail "the bundled coordinator did not start" "$(cat "$tmp/coordinator.log")"
run "$B/bin/hpt_worker" --kind=gpu --listen=127.0.0.1:0 --metrics= --threads=1 \
  --coordinator=127.0.0.1:"$port" --port_file="$tmp/w.port" >"$tmp/worker.log" 2>&1 &
worker=$!
for _ in $(seq 1 300); do [ -s "$tmp/w.port" ] && break; sleep 0.1; done
[ -s "$tmp/w.port" ] || fail "the bundled worker did not start" "$(cat "$tmp/worker.log")"
out=$(run "$B/bin/hptctl" --coordinator=127.0.0.1:"$port" submit --name=bundle --preset=tiny \
  --epochs=1 --stations=8 --time_steps=128 --mode=full --watch 2>&1) || fail "the job failed" "$out"
grep -q "): succeeded" <<<"$out" || fail "the job did not succeed" "$out"
echo "a job ran to its end on the bundled binaries"

# CPU twin of the GPU check: the bundled tools/gpu_check.sh on this CPU
# runs the calibration it has, reports the rest "not run", and sums up.
# Its step checks at batch 1 only: a wind step at batch 32 under bf16
# autocast took 96 s on a 2-core EPYC without AVX-512 (2026-11-30), and
# the probe and the model check time four of them.
check=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$paths" HPT_CHECK_DEVICE=cpu \
  HPT_PROBE_STEPS=1 HPT_PROBE_WARM_UP=1 HPT_CALIBRATE_QUICK=1 HPT_CHECK_BOUNDS=0 HPT_CHECK_BATCHES=1 \
  bash "$B/tools/gpu_check.sh" "$B/bin" "$tmp/check" 2>&1) ||
  fail "gpu_check failed" "$check
$(sed -nE 's/.*FAILED +([^ ]+) .*/\1/p' <<<"$check" | while read -r label; do
    echo "== the end of $label's log:" && tail -n 15 "$tmp/check/$label.log"
  done)"
grep -q "passed   calibrate" <<<"$check" || fail "gpu_check did not calibrate" "$check"
grep -q "not run  cuda-tests" <<<"$check" || fail "gpu_check did not report cuda_test" "$check"
grep -q "passed   probe-wind-b1" <<<"$check" || fail "gpu_check did not probe" "$check"
! grep -q "probe-wind-b32" <<<"$check" || fail "HPT_CHECK_BATCHES=1 probed batch 32" "$check"
grep -q "graph  not run: no CUDA" "$tmp/check/probe-wind-b1.log" ||
  fail "the probe did not say why graph did not run" "$(cat "$tmp/check/probe-wind-b1.log")"
grep -q "^name = cpu" "$tmp/check/gpu.profile" || fail "no profile written" "$(cat "$tmp/check/gpu.profile")"
grep -q "passed   profile-vs-this-gpu" <<<"$check" || fail "gpu_check did not compare" "$check"
grep -Eq "^  paper +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+" "$tmp/check/profile-vs-this-gpu.log" ||
  fail "no paper row against the profile" "$(cat "$tmp/check/profile-vs-this-gpu.log")"
echo "the bundled gpu_check ran on the CPU: $(grep -c "passed" <<<"$check") passed"
