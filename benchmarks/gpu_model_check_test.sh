#!/usr/bin/env bash
# The h100 preset against the measured H100 table and the bf16 graph steps an
# H200 measured (gpu_model_check's rows): every C++ eager, Python eager,
# Python fused, CUDA-graph and bf16 row, and every energy, within 25 %,
# except the rows KNOWN below, which must be exactly those outside.
#
# KNOWN: since the H200 tables' element-wise rates were repaired
# (2026-11-28: the calibration had timed two passes as one, see
# devices/gpu/profiles/h200.profile), the batch-1 graph steps come out
# 26-32 % fast. Held-out single kernels, small element-wise ones included,
# are now within 10 % of that H200 (docs/cost-model.md, "Out of sample"),
# so the step's missing time lies outside the kernels the model prices; it
# is not yet found. A KNOWN row that comes back inside fails this test too,
# so the list cannot outlive its cause.
#   gpu_model_check_test.sh GPU_MODEL_CHECK
set -euo pipefail
known="full b1, CUDA graph;full b1, bf16 (H200)"
out=$("$1" --gpu=h100)
echo "$out"
# A row: LABEL MEASURED ms MODEL ms RATIO (MEASURED_J J MODEL_J J RATIO | - - -) [outside]
awk -v known="$known" '
  BEGIN { n = split(known, k, ";"); for (i = 1; i <= n; i++) is_known[k[i]] = 1 }
  $0 !~ / ms .* ms / { next }
  {
    for (i = 1; i <= NF && $i !~ /^[0-9.]+$/; i++) {}
    label = $1; for (j = 2; j < i; j++) label = label " " $j
    ratio = $(i + 4); energy = $(i + 5) == "-" ? "" : $(i + 9)
    rows++
    outside = ratio < 0.75 || ratio > 1.25
    if (outside && !(label in is_known)) {
      print "gpu_model_check_test: " label ": time ratio " ratio; bad = 1
    }
    if (!outside && (label in is_known)) {
      print "gpu_model_check_test: " label ": time ratio " ratio " is inside now: drop it from KNOWN"
      bad = 1
    }
    if (label in is_known) seen[label] = 1
    if (energy != "" && (energy < 0.75 || energy > 1.25)) {
      print "gpu_model_check_test: " label ": energy ratio " energy; bad = 1
    }
  }
  END {
    if (rows != 12) { print "gpu_model_check_test: want 12 rows, read " rows; bad = 1 }
    for (l in is_known) if (!(l in seen)) { print "gpu_model_check_test: no row " l; bad = 1 }
    exit bad
  }' <<<"$out" >&2
echo "gpu_model_check_test: the h100 preset is within 25 % of 10 of 12 rows; the 2 KNOWN rows are outside"
