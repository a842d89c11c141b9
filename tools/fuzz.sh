#!/usr/bin/env bash
# libFuzzer targets under AddressSanitizer and UBSan, built with Debian's
# clang from the sources their Bazel rules name (fuzz/BUILD; Bazel's own
# toolchain stays gcc, so its cache is untouched), then run on the corpus in
# fuzz/corpus/<target>. `bazel test //fuzz:all` replays the same corpora.
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
mkdir -p "$OUT/obj"

CXX=${CXX_FUZZ:-clang++}
FLAGS=(-std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -I"$ROOT" -I"$ROOT/bazel-bin")
LINK=(-fsanitize=fuzzer,address,undefined)
LIBS=($(pkg-config --libs protobuf absl_status absl_statusor absl_strings absl_str_format \
        absl_synchronization absl_time absl_hash absl_raw_hash_set grpc++))

# Each target's sources, read from its Bazel rule (fuzz/BUILD) so that a
# library that grows a dependency grows the fuzzer with it: the project's
# .cc files, and the generated ones (protos, the embedded H200 profile),
# which Bazel makes first.
sources_of() {
  local rule=//fuzz:$1_fuzzer generated
  generated=$(bazel query "kind('generated file', deps($rule))" 2>/dev/null |
              grep '^//.*\.cc$' || true)
  if [ -n "$generated" ]; then
    # shellcheck disable=SC2086
    bazel build $generated >"$OUT/bazel-build.log" 2>&1 ||
      { echo "fuzz: bazel could not make $1's generated sources: see $OUT/bazel-build.log" >&2
        return 1; }
  fi
  bazel query "kind('source file', deps($rule))" 2>/dev/null | grep '^//.*\.cc$' |
    grep -v '^//fuzz:replay_main.cc$' | sed -e 's|^//||' -e 's|:|/|'
  echo "$generated" | sed -e '/^$/d' -e 's|^//|bazel-bin/|' -e 's|:|/|'
}

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

failed=0
targets=$(ls fuzz/*_fuzzer.cc | sed -e 's|fuzz/||' -e 's|_fuzzer.cc$||')
for target in $targets; do
  [ -n "$ONLY" ] && [ "$ONLY" != "$target" ] && continue
  objs=()
  srcs=$(sources_of "$target") || { failed=1; continue; }
  for src in $srcs; do
    obj=$(compile "$src") || { echo "fuzz: $src does not build with $CXX" >&2; failed=1; continue 2; }
    objs+=("$obj")
  done
  bin=$OUT/${target}_fuzzer
  if [ ! -e "$bin" ] || [ -n "$(find "${objs[@]}" -newer "$bin" | head -1)" ]; then
    "$CXX" "${LINK[@]}" "${objs[@]}" "${LIBS[@]}" -o "$bin" ||
      { echo "fuzz: ${target}_fuzzer does not link" >&2; failed=1; continue; }
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
