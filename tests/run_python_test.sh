#!/usr/bin/env bash
# Runs a Python test with Debian's interpreter (it has python3-yaml,
# python3-grpcio and python3-grpc-tools; a pyenv python on PATH may not).
exec /usr/bin/python3 "$@"
