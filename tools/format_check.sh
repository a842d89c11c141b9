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
command -v clang-format-14 >/dev/null ||
  { echo "format: clang-format-14 is missing: ./hpt setup --tests installs it" >&2; exit 2; }
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
# The lines changed since BASE, found by git with renames followed (a moved
# file is checked only where its text changed; git-clang-format would take
# every line of it as new), each file formatted by clang-format on those
# lines alone and compared with the working tree.
python3 - "$base" "$fix" <<'PY'
import difflib, re, subprocess, sys
base, fix = sys.argv[1], sys.argv[2] == "true"
diff = subprocess.run(["git", "diff", "-M", "-U0", "--no-color", "--diff-filter=AMR", base, "--",
                       "*.cc", "*.h"], capture_output=True, text=True, check=True).stdout
ranges, path = {}, None
for line in diff.splitlines():
    if line.startswith("+++ "):
        path = line[6:] if line.startswith("+++ b/") else None
    elif line.startswith("@@") and path:
        m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
        start, count = int(m.group(1)), int(m.group(2) or 1)
        if count:
            ranges.setdefault(path, []).append("%d:%d" % (start, start + count - 1))
bad = 0
for path, lines in sorted(ranges.items()):
    with open(path) as f:
        text = f.read()
    formatted = subprocess.run(["clang-format-14", "--style=file", "--assume-filename=" + path]
                               + ["--lines=" + r for r in lines], input=text,
                               capture_output=True, text=True, check=True).stdout
    if formatted == text:
        continue
    bad += 1
    if fix:
        with open(path, "w") as f:
            f.write(formatted)
        print("formatted", path)
    else:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), formatted.splitlines(True),
                                                   "a/" + path, "b/" + path, n=1))
short = subprocess.run(["git", "rev-parse", "--short", base], capture_output=True, text=True).stdout.strip()
if bad and not fix:
    print("format: %d file(s) changed since %s are not formatted as .clang-format says:"
          " tools/format_check.sh --fix formats those lines" % (bad, short), file=sys.stderr)
    sys.exit(1)
if not bad:
    print("format: the C++ lines changed since %s follow .clang-format" % short)
PY
