#!/bin/bash
# Each precompiled header's digest header (third_party/pch.bzl) holds the
# SHA-256 of its `.gch`. Units list the digest header in their dependency
# files where they cannot list the `.gch`, so a stale digest would let a
# unit outlive a change inside the `.gch` (a generated message's layout).
# Arguments: the `.gch` and digest header of each, as pairs.
set -euo pipefail
[[ $# -gt 0 && $(($# % 2)) -eq 0 ]] || { echo "usage: $0 GCH ID_HEADER [GCH ID_HEADER...]" >&2; exit 2; }
checked=0
while [[ $# -gt 0 ]]; do
  gch=$1 id=$2
  shift 2
  [[ $gch == *.gch && $id == *_id.h ]] || { echo "FAIL: not a .gch and its _id.h: $gch $id" >&2; exit 1; }
  want="// $(sha256sum "$gch" | cut -d' ' -f1)"
  got=$(cat "$id")
  if [[ $got != "$want" ]]; then
    echo "FAIL: $id holds '$got', the .gch's digest is '$want'" >&2
    exit 1
  fi
  echo "ok: $id is the digest of $(basename "$gch") ($(stat -L -c %s "$gch") bytes)"
  checked=$((checked + 1))
done
echo "$checked digest header(s) match their .gch"
