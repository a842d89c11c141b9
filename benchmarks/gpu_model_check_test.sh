#!/usr/bin/env bash
# The h100 preset against the measured H100 table and the bf16 graph steps an
# H200 measured (gpu_model_check's rows): every C++ eager, Python eager,
# Python fused, CUDA-graph and bf16 row, and every energy, within 25 %.
#   gpu_model_check_test.sh GPU_MODEL_CHECK
set -euo pipefail
out=$("$1" --gpu=h100)
echo "$out"
# A row: LABEL MEASURED ms MODEL ms RATIO (MEASURED_J J MODEL_J J RATIO | - - -) [outside]
awk '
  $0 !~ / ms .* ms / { next }
  {
    for (i = 1; i <= NF && $i !~ /^[0-9.]+$/; i++) {}
    label = $1; for (j = 2; j < i; j++) label = label " " $j
    ratio = $(i + 4); energy = $(i + 5) == "-" ? "" : $(i + 9)
    rows++
    if (ratio < 0.75 || ratio > 1.25) { print "gpu_model_check_test: " label ": time ratio " ratio; bad = 1 }
    if (energy != "" && (energy < 0.75 || energy > 1.25)) {
      print "gpu_model_check_test: " label ": energy ratio " energy; bad = 1
    }
  }
  END {
    if (rows != 12) { print "gpu_model_check_test: want 12 rows, read " rows; bad = 1 }
    exit bad
  }' <<<"$out" >&2
echo "gpu_model_check_test: the h100 preset is within 25 % of all 12 rows"
