#!/usr/bin/env bash
# hpt_devsim from the command line: JSON fields for both devices, SCALE-Sim's
# golden AlexNet-conv1 numbers, and a clear error with exit code 2.
set -euo pipefail
bin="$1"
out=$("$bin" --device=systolic --systolic_rows=32 --systolic_cols=32 --systolic_dataflow=ws --m=3025 --n=96 --k=363 --format=json)
for field in '"total_cycles": 112283' '"stall_cycles": 0' '"mapping_eff_pct": 94.5312' \
             '"sram_ifmap_reads": 3294225' '"sram_filter_reads": 34848' \
             '"sram_ofmap_writes": 3484800' '"overall_util_pct": 91.6831' '"latency_s":' '"energy_j":'; do
  grep -qF "$field" <<<"$out" || { echo "systolic JSON lacks $field: $out"; exit 1; }
done
# Finite DRAM bandwidth: SCALE-Sim v2's USER mode (devices/systolic/systolic_array_test.cc).
out=$("$bin" --device=systolic --systolic_rows=32 --systolic_cols=32 --systolic_dataflow=os --m=256 --n=128 --k=256 \
      --systolic_dram_bw_words_per_cycle=2 --systolic_ifmap_sram_kb=4 --systolic_filter_sram_kb=4 --systolic_ofmap_sram_kb=4 --format=json)
for field in '"total_cycles": 523882' '"stall_cycles": 513707'; do
  grep -qF "$field" <<<"$out" || { echo "systolic USER JSON lacks $field: $out"; exit 1; }
done
out=$("$bin" --device=reram --m=16 --n=512 --k=512 --format=json)
# NeuroSim's floorplan of 512 x 512 (four 512-cell tiles, 64 subarrays),
# 4 cells per weight, one copy.
for field in '"subarrays": 64' '"tiles": 4' '"duplication": 1' '"program_cell_writes": 1048576' \
             '"adc_conversions": 1048576' '"latency_s":' '"energy_j":'; do
  grep -qF "$field" <<<"$out" || { echo "reram JSON lacks $field: $out"; exit 1; }
done
field() { grep -oE "\"$1\": [0-9.e+-]+" <<<"$2" | awk '{print $2}'; }
# A 64-tile chip copies the layer into its free tiles: faster reads, more cells.
chip=$("$bin" --device=reram --m=16 --n=512 --k=512 --tiles=64 --format=json)
copies=$(field duplication "$chip")
[ "$copies" -gt 1 ] || { echo "no duplication on a 64-tile chip: $chip"; exit 1; }
[ "$(field program_cell_writes "$chip")" -eq $((1048576 * copies)) ] \
  || { echo "copies' cells not all written: $chip"; exit 1; }
awk -v a="$(field latency_s "$chip")" -v b="$(field latency_s "$out")" 'BEGIN { exit !(a < b) }' \
  || { echo "copies did not shorten the read: $chip vs $out"; exit 1; }
# One GEMM kernel on a V100: a tiny one is launch-bound (the 10 us dispatch).
out=$("$bin" --device=gpu --gpu=v100 --m=8 --n=8 --k=8 --format=json)
for field in '"latency_s": 1e-05' '"kernels": 1' '"launch_bound": true' '"flops": 1024'; do
  grep -qF "$field" <<<"$out" || { echo "gpu JSON lacks $field: $out"; exit 1; }
done
table=$("$bin" --device=systolic --m=4 --n=4 --k=4 --systolic_rows=4 --systolic_cols=4)
grep -qE '^total_cycles +9$' <<<"$table" || { echo "table output wrong: $table"; exit 1; }
set +e
err=$("$bin" --device=systolic --m=4 --n=4 --k=4 --systolic_dataflow=xs 2>&1)
code=$?
set -e
[ "$code" -eq 2 ] || { echo "bad dataflow exited $code"; exit 1; }
grep -qF "dataflow 'xs' is not os, ws or is" <<<"$err" || { echo "unclear error: $err"; exit 1; }
echo "1 passed, 0 failed"
