#!/usr/bin/env bash
# The command-line client links no LibTorch: hptctl receives the exported
# TorchScript file from the coordinator, so it builds in seconds and runs
# where LibTorch is not installed. Each binary given is checked for LibTorch
# among the shared libraries it needs.
set -euo pipefail
for bin in "$@"; do
  needed=$(readelf -d "$bin" | grep NEEDED || true)
  [ -n "$needed" ] || { echo "readelf found no NEEDED entries in $bin"; exit 1; }
  if grep -E 'lib(torch|c10)' <<<"$needed"; then
    echo "$bin links LibTorch (above); keep //third_party:torch out of its dependencies"
    exit 1
  fi
  echo "$bin: $(wc -l <<<"$needed") shared libraries, none of them LibTorch"
done
