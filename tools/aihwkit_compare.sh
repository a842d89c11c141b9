#!/usr/bin/env bash
# The ReRAM model's read error beside IBM aihwkit's analog tile:
# installs aihwkit 1.1.0 from PyPI into ~/.cache/hpt/aihwkit-venv (next to
# the hpt venv, whose torch it uses), builds and runs
# //benchmarks:reram_error_stats, then benchmarks/aihwkit_compare.py.
#
#   tools/aihwkit_compare.sh [--in=512 --out=512 --rows=256 --trials=5]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HPT_VENV=${HPT_VENV:-$HOME/.cache/hpt/venv}
VENV=${AIHWKIT_VENV:-$HOME/.cache/hpt/aihwkit-venv}
[ -x "$HPT_VENV/bin/python" ] || "$ROOT/hpt" setup
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
site=$("$HPT_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
own=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$site" > "$own/hpt_torch.pth"
req="$ROOT/third_party/aihwkit-requirements.txt"
stamp="$VENV/.requirements.sha256"
if [ "$(sha256sum "$req" | cut -d' ' -f1)" != "$(cat "$stamp" 2>/dev/null)" ]; then
  "$VENV/bin/pip" install -q --no-deps -r "$req"
  sha256sum "$req" | cut -d' ' -f1 > "$stamp"
fi
cd "$ROOT"
bazel build -c opt --noshow_progress //benchmarks:reram_error_stats
bazel-bin/benchmarks/reram_error_stats "$@"
"$VENV/bin/python" benchmarks/aihwkit_compare.py "$@"
