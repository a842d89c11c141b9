#!/usr/bin/env bash
# The C++ lines changed since the tree adopted .clang-format (the commit
# that added it, or BASE), checked against it with Debian's clang-format:
# a change formats what it touches, and the history of untouched lines
# stays as it was.
#
#   tools/format_check.sh [BASE]        exit 1 and the diff where a line is off
#   tools/format_check.sh --fix [BASE]  format those lines in the working tree
set -euo pipefail
cd "$(dirname "$0")/.."
fix=false
if [ "${1:-}" = --fix ]; then fix=true; shift; fi
tool=git-clang-format-14
command -v "$tool" >/dev/null ||
  { echo "format: $tool is missing: ./hpt setup --tests installs clang-format-14" >&2; exit 2; }
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "format: not a git checkout, so no change to check: not run" >&2
  exit 3
fi
base=${1:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -1)}
base=${base:-HEAD}  # .clang-format not committed yet: the working tree's changes
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "format: commit $base is not in this clone (shallow?): git fetch --unshallow, or give BASE" >&2
  exit 2
fi
if $fix; then
  "$tool" --binary clang-format-14 --extensions cc,h -f "$base" || true
  exit 0
fi
diff=$("$tool" --binary clang-format-14 --diff --extensions cc,h "$base" || true)
if grep -q '^diff --git' <<<"$diff"; then
  printf '%s\n' "$diff"
  files=$(grep -c '^diff --git' <<<"$diff")
  echo "format: $files file(s) changed since $(git rev-parse --short "$base") are not formatted" \
       "as .clang-format says: tools/format_check.sh --fix formats those lines" >&2
  exit 1
fi
echo "format: the C++ lines changed since $(git rev-parse --short "$base") follow .clang-format"
