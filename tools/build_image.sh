#!/usr/bin/env bash
# ./hpt image: builds hpt:latest from source with deploy/Dockerfile (the
# user's path), making its debian:12 base locally when no registry has it
# (tools/debian_base_image.sh). The builder stage trusts what this host
# trusts: the host's CA bundle goes in as deploy/extra-ca.crt (ignored by
# Git), which matters where a proxy intercepts TLS to PyPI. Prints the
# build time and the image's size.
#   tools/build_image.sh [TAG]
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-hpt:latest}
log() { printf '\033[1mhpt:\033[0m %s\n' "$*" >&2; }
docker info >/dev/null 2>&1 || { log "no Docker engine answers here"; exit 2; }
tools/debian_base_image.sh debian:12
bundle=/etc/ssl/certs/ca-certificates.crt
if [ -f "$bundle" ]; then cp "$bundle" deploy/extra-ca.crt; else rm -f deploy/extra-ca.crt; fi
trap 'rm -f deploy/extra-ca.crt' EXIT
log "building $tag from source with deploy/Dockerfile (Debian packages, the torch wheel, Bazel: about 8 min the first time on 2 cores)"
t0=$SECONDS
# Only the step lines, as they come; a failing build fails the pipeline.
docker build -t "$tag" -f deploy/Dockerfile . | while IFS= read -r line; do
  case $line in "Step "*) printf '%s\n' "${line:0:100}" >&2 ;; esac
done
log "$tag built from source in $((SECONDS - t0)) s: \
$(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.2f GB", $1/1e9}')"
