#!/usr/bin/env bash
# Makes the image deploy/Dockerfile starts FROM (debian:12) without a
# container registry: Debian's debootstrap builds a minimal bookworm root
# from the Debian archive, and docker import turns it into an image tagged
# debian:12. Does nothing when the image exists.
#   tools/debian_base_image.sh [TAG]
set -euo pipefail
tag=${1:-debian:12}
if docker image inspect "$tag" >/dev/null 2>&1; then
  exit 0
fi
mirror=${HPT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$(mktemp -d /tmp/hpt-debootstrap.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "hpt: no $tag image and no registry: building it with debootstrap from $mirror" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
# The archive's security and update suites, as the official image has them.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
  "$mirror" "$mirror" | $sudo tee "$root/etc/apt/sources.list" >/dev/null
$sudo rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
$sudo tar -C "$root" -c . | docker import -c 'CMD ["bash"]' - "$tag" >/dev/null
echo "hpt: made $tag locally (debootstrap + docker import)" >&2
