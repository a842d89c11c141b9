#!/usr/bin/env bash
# kernel_holdout's CPU twin: measuring needs CUDA and says "not run" here;
# a CSV of one profile's own model times compares exact on that profile
# (exit 0) and outside the bound on another (exit 1, its classes starred);
# a damaged CSV is refused naming its line (exit 2); timed as idle calls
# (--measured_as=event) the same cases are slower by their host's launch.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$bin" --measure_on=cuda:0 --out="$tmp/measured.csv" 2>&1)
rc=$?
if [ "$rc" -eq 3 ]; then
  grep -q "no CUDA device here (not run)" <<<"$out" || fail "no 'not run' line: $out"
  echo "measuring: not run (no CUDA device on this machine)"
elif [ "$rc" -ne 0 ]; then
  fail "measuring exited $rc: $out"
fi

"$bin" --model_csv=h100 --out="$tmp/h100.csv" >/dev/null || fail "--model_csv failed"
[ "$(grep -c '^gemm,' "$tmp/h100.csv")" -ge 5 ] || fail "too few GEMM rows: $(cat "$tmp/h100.csv")"
same=$("$bin" --measured="$tmp/h100.csv" --gpu=h100 --check 2>&1) ||
  fail "the model's own times were not exact on h100: $same"
for class in gemm batched layer-norm softmax elementwise; do
  grep -Eq "^$class +0 % \( 1.00x\)" <<<"$same" || fail "$class not exact: $same"
done

other=$("$bin" --measured="$tmp/h100.csv" --gpu=v100 --check 2>&1)
[ $? -eq 1 ] || fail "v100 against h100's times passed --check: $other"
grep -q "^gemm .*\*" <<<"$other" || fail "v100's GEMMs not starred against an h100: $other"
grep -q "class-profile pairs above 15 %" <<<"$other" || fail "no count line: $other"

# Timed as one call on an idle GPU, each case also waits for its host's
# launch (15 us on the presets), so the graph-replay times are slower.
event=$("$bin" --measured="$tmp/h100.csv" --gpu=h100 --measured_as=event 2>&1) ||
  fail "--measured_as=event failed: $event"
for class in gemm batched layer-norm softmax elementwise; do
  grep -Eq "^$class +[0-9]+ % \( *([1-9][0-9]*\.[0-9]+|1\.0[1-9])x\)" <<<"$event" ||
    fail "$class not slower timed as an idle call: $event"
done
wrong=$("$bin" --measured="$tmp/h100.csv" --gpu=h100 --measured_as=profiler 2>&1)
[ $? -eq 2 ] || fail "--measured_as=profiler was accepted: $wrong"
grep -q "want graph, kernel or event" <<<"$wrong" || fail "no fix in: $wrong"

printf 'class,case,reps,measured_s,ops\ngemm,mm 24x320x1280,40,-1,aten::mm\n' >"$tmp/bad.csv"
bad=$("$bin" --measured="$tmp/bad.csv" --gpu=h100 2>&1)
[ $? -eq 2 ] || fail "a negative time was accepted: $bad"
grep -q "bad.csv line 2" <<<"$bad" || fail "the error does not name the line: $bad"
grep -q "re-measure with --measure_on" <<<"$bad" || fail "the error gives no fix: $bad"
echo "kernel_holdout: twin exact on h100, v100 outside, a damaged CSV refused"
