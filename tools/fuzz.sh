#!/usr/bin/env bash
# libFuzzer targets under AddressSanitizer and UBSan, built with Debian's
# clang straight from the sources (Bazel's toolchain stays gcc, so its cache
# is untouched), then run on the corpus in fuzz/corpus/<target>.
#
#   tools/fuzz.sh [SECONDS]     run every target SECONDS (default 10)
#   tools/fuzz.sh SECONDS NAME  only fuzz/NAME_fuzzer.cc
#
# New inputs the fuzzer finds go to build-out/fuzz/corpus/<target> (not the
# repository's corpus); a crash leaves its input in build-out/fuzz/ and
# fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_EACH=${1:-10}
ONLY=${2:-}
OUT=$ROOT/build-out/fuzz
mkdir -p "$OUT/gen" "$OUT/obj"

CXX=${CXX_FUZZ:-clang++}
FLAGS=(-std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -I"$ROOT" -I"$OUT/gen")
LINK=(-fsanitize=fuzzer,address,undefined)
LIBS=($(pkg-config --libs protobuf absl_status absl_statusor absl_strings absl_str_format \
        absl_synchronization absl_time absl_hash absl_raw_hash_set))

# Protos: work.proto (recorded work), common.proto (tensors, model and LoRA
# configs), job_service.proto.
for p in work common job_service; do
  if [ ! -e "$OUT/gen/proto/$p.pb.cc" ] || [ "proto/$p.proto" -nt "$OUT/gen/proto/$p.pb.cc" ]; then
    protoc -I"$ROOT" --cpp_out="$OUT/gen" "proto/$p.proto"
  fi
done

# The h100 preset's measured kernels, as //devices:h200_profile_cc makes them.
mkdir -p "$OUT/gen/devices"
if [ ! -e "$OUT/gen/devices/h200_profile.cc" ] ||
   [ devices/gpu/profiles/h200.profile -nt "$OUT/gen/devices/h200_profile.cc" ]; then
  sh devices/gpu/profiles/embed_profile.sh devices/gpu/profiles/h200.profile \
    "$OUT/gen/devices/h200_profile.cc"
fi

# One object per source, rebuilt when the source or any header is newer.
compile() {
  local src=$1 obj=$OUT/obj/$(echo "$1" | tr '/' '_').o
  local newest
  newest=$(find "$ROOT/data" "$ROOT/common" "$ROOT/coordinator" "$ROOT/models" "$ROOT/devices" \
           "$ROOT/fuzz" \
           -name '*.h' -newer "$obj" 2>/dev/null | head -1 || true)
  if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$newest" ]; then
    "$CXX" "${FLAGS[@]}" -c "$src" -o "$obj"
  fi
  echo "$obj"
}

declare -A SOURCES=(
  [wide_csv]="data/wide_csv.cc data/text_file.cc data/timestamps.cc common/user_file.cc"
  [weather]="data/real_data.cc data/text_file.cc data/timestamps.cc common/user_file.cc"
  [covid]="data/real_data.cc data/text_file.cc data/timestamps.cc common/user_file.cc"
  [swe]="data/swe.cc data/text_file.cc common/user_file.cc"
  [spec]="coordinator/spec/job_spec.cc coordinator/spec/hpt_spec.cc coordinator/spec/paper_recipes.cc coordinator/spec/spec_names.cc models/model_config.cc models/lora_config.cc \
models/model_flops.cc $OUT/gen/proto/work.pb.cc $OUT/gen/proto/common.pb.cc \
$OUT/gen/proto/job_service.pb.cc"
  [gpu_profile]="devices/gpu/roofline.cc devices/gpu/gemm_grid.cc common/user_file.cc \
$OUT/gen/devices/h200_profile.cc"
  [tensor_codec]="common/tensor_codec.cc common/host_tensor.cc $OUT/gen/proto/work.pb.cc \
$OUT/gen/proto/common.pb.cc"
)

failed=0
for target in wide_csv weather covid swe spec gpu_profile tensor_codec; do
  [ -n "$ONLY" ] && [ "$ONLY" != "$target" ] && continue
  objs=()
  for src in fuzz/${target}_fuzzer.cc ${SOURCES[$target]}; do objs+=("$(compile "$src")"); done
  bin=$OUT/${target}_fuzzer
  if [ ! -e "$bin" ] || [ -n "$(find "${objs[@]}" -newer "$bin" | head -1)" ]; then
    "$CXX" "${LINK[@]}" "${objs[@]}" "${LIBS[@]}" -o "$bin"
  fi
  mkdir -p "$OUT/corpus/$target"
  log=$OUT/$target.log
  if (cd "$OUT" && "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "$OUT/corpus/$target" "$ROOT/fuzz/corpus/$target") >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    printf 'fuzz %-13s %8s executions in %ss, no crash\n' "$target" "$runs" "$SECONDS_EACH"
  else
    printf 'fuzz %-13s CRASHED: see %s\n' "$target" "$log"
    grep -m3 -E 'ERROR|SUMMARY|runtime error' "$log" || true
    failed=1
  fi
done
exit $failed
