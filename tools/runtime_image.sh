#!/usr/bin/env bash
# Builds the runtime image hpt:latest (deploy/Dockerfile.runtime) from the
# binaries in bazel-bin and the venv's LibTorch, with debian:12 made
# locally when no registry has it. Used by ./hpt compose-test and
# ./hpt slurm-test; build the binaries first (./hpt build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
HPT_VENV=${HPT_VENV:-$HOME/.cache/hpt/venv}
tools/debian_base_image.sh debian:12
site=$("$HPT_VENV/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
stage=$ROOT/build-out/image
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/site/torch"
cp bazel-bin/coordinator/hpt_coordinator bazel-bin/workers/main/hpt_worker bazel-bin/hptctl/hptctl \
  deploy/with-tls "$stage/bin/"
cp -al "$site/torch/lib" "$stage/site/torch/lib" 2>/dev/null || cp -a "$site/torch/lib" "$stage/site/torch/lib"
cp -al "$site/nvidia" "$stage/site/nvidia" 2>/dev/null || cp -a "$site/nvidia" "$stage/site/nvidia"
find "$stage/site/nvidia" \( -name include -o -name __pycache__ \) -type d -prune -exec rm -rf {} +
docker build -q -t hpt:latest --build-arg SITE="$site" -f deploy/Dockerfile.runtime "$stage" >/dev/null
