#!/usr/bin/env bash
# The first build's head start, while pip downloads the LibTorch wheel
# (./hpt's setup_and_prebuild runs it):
#
#   tools/prebuild.sh LOG PIP TARGET...
#
# builds every library and generated file TARGETs need that does not need
# LibTorch. Bazel cannot load the LibTorch repository while pip runs
# (third_party/torch/repo.bzl refuses while $HPT_VENV/.hpt-installing
# exists), so the query and the build keep going past what needs it; their
# errors are expected and go to LOG. When pip (process PIP) finishes first,
# the build is interrupted there and the script exits 3 (handed over): the
# real build then compiles LibTorch's precompiled header, which every
# LibTorch unit waits for, beside what is left, instead of after it with
# one core idle. Otherwise it exits 0. BAZEL names the Bazel to run
# (default bazel).
set -uo pipefail
log_file=$1 pip=$2
shift 2
BAZEL=${BAZEL:-bazel}

# Whether PIP still runs: a process that has exited but that its parent
# has not reaped yet (a zombie) has finished too.
pip_running() {
  local state
  state=$(sed -E 's/^.*\) (.).*$/\1/' "/proc/$pip/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

expr=$(printf ' + %s' "$@")
targets=$("$BAZEL" query --keep_going "kind('cc_library|genrule', deps(${expr:3}))" \
  2>"$log_file" | grep '^//') || true
[ -n "$targets" ] || exit 0
pip_running || exit 0
# A background command of a script starts with SIGINT ignored; the build
# gets it back so that it can be interrupted.
# shellcheck disable=SC2086
env --default-signal=INT "$BAZEL" build --keep_going $targets >>"$log_file" 2>&1 &
build=$!
handed_over=0
while kill -0 "$build" 2>/dev/null; do
  if ! pip_running; then
    kill -INT "$build" 2>/dev/null
    handed_over=3
    break
  fi
  sleep 1
done
wait "$build"
exit "$handed_over"
