#!/usr/bin/env bash
# ./hpt compose-test: the compose stack for real, as the README's compose
# section runs it. Builds the images (debian:12 made locally when no
# registry has it), starts coordinator, the three workers and Prometheus
# with docker-compose, trains a tiny HpT job through the phase switch from
# the host with hptctl through the published port, checks through
# Prometheus' HTTP API inside the compose network that all four processes
# were scraped and the job's loss and phase series arrived, and tears the
# stack down (docker-compose down -v). Prints timings; exits non-zero on
# any failure. Without a Docker engine it prints one line and exits 3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
log() { printf '\033[1mcompose-test:\033[0m %s\n' "$*" >&2; }

if ! docker info >/dev/null 2>&1; then
  echo "compose: not tested (no Docker engine answers here)"
  exit 3
fi
if docker compose version >/dev/null 2>&1; then
  COMPOSE=(docker compose)
elif command -v docker-compose >/dev/null; then
  COMPOSE=(docker-compose)
else
  echo "compose: not tested (neither docker compose nor docker-compose is installed)"
  exit 3
fi
HPT_VENV=${HPT_VENV:-$HOME/.cache/hpt/venv}
PROJECT=hpt-test
DC=("${COMPOSE[@]}" -p "$PROJECT" --env-file deploy/hpt.env -f deploy/docker-compose.yml)
set -a; . deploy/hpt.env; set +a

cleanup() { "${DC[@]}" down -v >/dev/null 2>&1 || true; }
trap cleanup EXIT

t0=$SECONDS
tools/debian_base_image.sh debian:12
site=$("$HPT_VENV/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
stage=$ROOT/build-out/image
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/site/torch"
cp bazel-bin/coordinator/hpt_coordinator bazel-bin/workers/hpt_worker bazel-bin/hptctl/hptctl \
  deploy/with-tls "$stage/bin/"
cp -al "$site/torch/lib" "$stage/site/torch/lib" 2>/dev/null || cp -a "$site/torch/lib" "$stage/site/torch/lib"
cp -al "$site/nvidia" "$stage/site/nvidia" 2>/dev/null || cp -a "$site/nvidia" "$stage/site/nvidia"
find "$stage/site/nvidia" -name include -type d -prune -exec rm -rf {} +
docker build -q -t hpt:latest --build-arg SITE="$site" -f deploy/Dockerfile.runtime "$stage" >/dev/null
docker build -q -t hpt-prometheus:latest -f deploy/Dockerfile.prometheus deploy >/dev/null
build_s=$((SECONDS - t0))
log "images built in ${build_s}s: $(docker image inspect -f '{{.Size}}' hpt:latest | awk '{printf "hpt %.2f GB", $1/1e9}'),\
 $(docker image inspect -f '{{.Size}}' hpt-prometheus:latest | awk '{printf "hpt-prometheus %.0f MB", $1/1e6}')"

t1=$SECONDS
"${DC[@]}" up -d --no-build >/dev/null 2>&1 || { "${DC[@]}" up -d --no-build; exit 1; }
ctl=(bazel-bin/hptctl/hptctl --coordinator=127.0.0.1:$HPT_COORDINATOR_GRPC_PORT)
for _ in $(seq 1 120); do
  "${ctl[@]}" list >/dev/null 2>&1 && break
  sleep 1
done
log "stack up; submitting a tiny HpT job through the published port"
out=$(timeout 600 "${ctl[@]}" submit --name=compose-test --preset=tiny --stations=16 \
  --time_steps=512 --epochs=6 --batch_size=16 --lr=0.002 --hpt_window_steps=5 \
  --loss_threshold=0.5 --weight_threshold=0.5 --lora_rank=4 --watch 2>&1) || {
  echo "$out"; "${DC[@]}" logs --tail=50; exit 1; }
echo "$out" | tail -25
echo "$out" | grep -q "): succeeded" || { log "the job did not succeed"; exit 1; }
echo "$out" | grep -q "lora" || { log "the job never reached the LoRA phase"; exit 1; }
job=$(echo "$out" | grep -o 'job-[0-9]*' | head -1)
up_s=$((SECONDS - t1))

# Prometheus' HTTP API, from inside the compose network.
query() {
  "${DC[@]}" exec -T prometheus wget -qO- \
    "http://localhost:$HPT_PROMETHEUS_PORT/api/v1/query?query=$1"
}
ok=""
for _ in $(seq 1 30); do
  targets=$(query 'count(up==1)' | grep -o '"value":\[[^]]*\]' | grep -o '"[0-9]*"$' | tr -d '"')
  loss=$(query "count(hpt_job_loss{job_id=\"$job\"})" | grep -o '"value":\[[^]]*\]' || true)
  phase=$(query "count(hpt_job_phase{job_id=\"$job\"})" | grep -o '"value":\[[^]]*\]' || true)
  if [ "${targets:-0}" = "4" ] && [ -n "$loss" ] && [ -n "$phase" ]; then ok=1; break; fi
  sleep 2
done
[ -n "$ok" ] || { log "Prometheus: targets up ${targets:-0}/4, loss series '${loss}', phase series '${phase}'"; exit 1; }
log "Prometheus scraped all 4 processes; $job's hpt_job_loss and hpt_job_phase series are there"
"${DC[@]}" down -v >/dev/null 2>&1
trap - EXIT
log "passed: images ${build_s}s, up to succeeded ${up_s}s, ${SECONDS}s in all"
