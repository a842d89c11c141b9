#!/usr/bin/env bash
# Runs a Python test with the virtual environment ./hpt setup makes
# ($HPT_VENV, default ~/.cache/hpt/venv): stock PyPI clients (grpcio,
# grpcio-health-checking, grpcio-reflection) pinned in
# third_party/tools-requirements.txt.
venv=${HPT_VENV:-$(getent passwd "$(id -u)" | cut -d: -f6)/.cache/hpt/venv}
if [ ! -x "$venv/bin/python3" ]; then
  echo "no virtual environment at $venv: run ./hpt setup (or set HPT_VENV)" >&2
  exit 1
fi
exec "$venv/bin/python3" "$@"
