#!/usr/bin/env bash
# tools/gpu_bundle.sh [OUT.tar.xz]: the service's binaries and every library
# they load except LibTorch's, CUDA's and the C runtime's, in one archive
# for a GPU machine that has its own torch and none of Debian's packages
# (docs/building.md, "A GPU machine"). There:
#
#   tar -xJf hpt-gpu.tar.xz && cd hpt
#   . ./env.sh          # LD_LIBRARY_PATH: lib/ and that machine's torch/lib
#   bin/hpt_coordinator --listen=127.0.0.1:50051 &
#   bin/hpt_worker --kind=gpu --device=cuda:0 --coordinator=127.0.0.1:50051 &
#   tools/gpu_check.sh          # every GPU check, one summary
#
# Build the binaries against that machine's torch version first
# (HPT_TORCH, or HPT_VENV with the same torch), so they link the libtorch
# it has.
#
#   --no-build --binaries A,B,...   bundle these binaries as they are (tests)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
out=$ROOT/build-out/hpt-gpu.tar.xz
binaries=()
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --binaries) IFS=, read -r -a binaries <<<"$2"; shift ;;
    -*) echo "gpu_bundle: unknown flag $1" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
if [ "$build" = 1 ]; then
  (cd "$ROOT" && ./hpt build //devices:hpt_devsim //workers/calibrate:hpt_calibrate //workers/calibrate:hpt_probe \
    //benchmarks:gpu_model_check //benchmarks:cpu_profile_check \
    //benchmarks:step_overhead_bench //benchmarks:attention_bench //benchmarks:kernel_holdout \
    //tests:cuda_test)
  binaries=("$ROOT"/bazel-bin/coordinator/hpt_coordinator "$ROOT"/bazel-bin/workers/main/hpt_worker
            "$ROOT"/bazel-bin/hptctl/hptctl "$ROOT"/bazel-bin/devices/hpt_devsim
            "$ROOT"/bazel-bin/workers/calibrate/hpt_calibrate "$ROOT"/bazel-bin/workers/calibrate/hpt_probe
            "$ROOT"/bazel-bin/benchmarks/gpu_model_check
            "$ROOT"/bazel-bin/benchmarks/cpu_profile_check
            "$ROOT"/bazel-bin/benchmarks/step_overhead_bench
            "$ROOT"/bazel-bin/benchmarks/attention_bench
            "$ROOT"/bazel-bin/benchmarks/kernel_holdout
            "$ROOT"/bazel-bin/tests/cuda_test)
fi
[ ${#binaries[@]} -gt 0 ] || { echo "gpu_bundle: no binaries" >&2; exit 2; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/hpt/bin" "$stage/hpt/lib"

# What the GPU machine has or brings: the C runtime and the dynamic loader,
# and LibTorch with CUDA's libraries (its torch/lib and nvidia/*/lib).
provided() {
  case "$1" in
    */torch/lib/*|*/nvidia/*/lib/*) return 0 ;;
  esac
  case "$(basename "$1")" in
    ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libgcc_s.so*|libstdc++.so*)
      return 0 ;;
  esac
  return 1
}

# Copies $1's libraries (ldd's view) that the machine does not provide.
copy_libraries() {
  local lib
  while read -r lib; do
    [ -n "$lib" ] && [ -e "$lib" ] || continue
    provided "$lib" && continue
    [ -e "$stage/hpt/lib/$(basename "$lib")" ] && continue
    cp -L "$lib" "$stage/hpt/lib/"
  done < <(ldd "$1" | awk '/=> \// { print $3 }')
}

for b in "${binaries[@]}"; do
  cp -L "$b" "$stage/hpt/bin/"
  chmod u+w "$stage/hpt/bin/$(basename "$b")"
  # Debug sections only: the symbol table stays, so that a stuck
  # process's stacks name its functions (gpu_check.sh's hung_report).
  strip --strip-debug "$stage/hpt/bin/$(basename "$b")"
  copy_libraries "$b"
done
# devices/blas.cc opens OpenBLAS by name at run time (libblas.so.3), so ldd
# does not list it: the library the alternative points at, and its own.
# (awk reads to the end: stopping at the first match would kill ldconfig
# with SIGPIPE, which pipefail turns into this script's exit 141.)
blas=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p | awk '/libblas\.so\.3 / && !found { print $NF; found = 1 }')
if [ -n "$blas" ]; then
  cp -L "$blas" "$stage/hpt/lib/libblas.so.3"
  copy_libraries "$blas"
fi

cat >"$stage/hpt/env.sh" <<'ENV'
# Source me: the bundle's libraries, then the machine's LibTorch (its
# libtorch_cuda.so finds CUDA's libraries through its own RUNPATH).
# HPT_TORCH_LIB: torch/lib, default the one python3's torch has.
_hpt_here=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
: "${HPT_TORCH_LIB:=$(python3 -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "lib"))')}"
export LD_LIBRARY_PATH="$_hpt_here/lib:$HPT_TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$_hpt_here/bin:$PATH"
ENV

mkdir -p "$stage/hpt/tools"
cp "$ROOT/tools/gpu_check.sh" "$stage/hpt/tools/"

mkdir -p "$(dirname "$out")"
tar -C "$stage" -cJf "$out" hpt
echo "gpu_bundle: $out ($(du -h "$out" | cut -f1); $(ls "$stage/hpt/bin" | wc -l) binaries, $(ls "$stage/hpt/lib" | wc -l) libraries)"
