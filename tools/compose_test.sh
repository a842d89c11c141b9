#!/usr/bin/env bash
# ./hpt compose-test: the compose stack for real, as the README's compose
# section runs it. Builds the images (debian:12 made locally when no
# registry has it), starts coordinator, the three workers and Prometheus
# with docker-compose, trains a tiny HpT job through the phase switch from
# the host with hptctl through the published port, checks through
# Prometheus' HTTP API inside the compose network that all four processes
# were scraped and the job's loss and phase series arrived, injects three
# faults across containers, runs a job in secure mode (TLS and tokens), and
# tears the stack down (docker-compose down -v). Prints timings; exits non-zero on
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
# The GPU override resolves (its reservation lands on worker-gpu), and is
# used where the engine has the NVIDIA runtime.
"${DC[@]}" -f deploy/docker-compose.gpu.yml config | grep "driver: nvidia" >/dev/null \
  || { log "deploy/docker-compose.gpu.yml does not resolve to a GPU reservation"; exit 1; }
if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep nvidia >/dev/null; then
  DC+=(-f deploy/docker-compose.gpu.yml)
  log "the engine has the NVIDIA runtime: worker-gpu gets a GPU (deploy/docker-compose.gpu.yml)"
fi
set -a; . deploy/hpt.env; set +a

cleanup() { "${DC[@]}" down -v >/dev/null 2>&1 || true; }
trap cleanup EXIT

t0=$SECONDS
if [ "${1:-}" = --from-source ]; then
  tools/build_image.sh hpt:latest
else
  tools/runtime_image.sh
fi
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
# The plain file has no authentication: every port it publishes is bound
# to loopback (HPT_BIND, default 127.0.0.1), never to every interface.
published=$(for c in $("${DC[@]}" ps -q); do docker port "$c"; done)
[ -n "$published" ] || { log "docker port lists no published port"; exit 1; }
if grep -v -- "-> 127\.0\.0\.1:" <<<"$published"; then
  log "the plain compose file publishes the ports above beyond loopback"; exit 1
fi
log "every published port is bound to 127.0.0.1 ($(wc -l <<<"$published") bindings, docker port)"
"${DC[@]}" logs coordinator 2>&1 | grep -q "WARNING: the JobService is reachable" \
  && { log "the coordinator warns of exposure on loopback"; exit 1; }
log "stack up; submitting a tiny HpT job through the published port"
submitted=$(timeout 60 "${ctl[@]}" submit --name=compose-test --preset=tiny --stations=16 \
  --time_steps=512 --epochs=6 --batch_size=16 --lr=0.002 --check_window_steps=5 \
  --loss_threshold=0.5 --weight_threshold=0.5 --lora_rank=4 2>&1) || {
  echo "$submitted"; "${DC[@]}" logs --tail=50; exit 1; }
job=$(grep -o -m1 'job-[0-9]*' <<<"$submitted")
# From `up` to the job's first finished step, as its status reports it.
first_step_s=""
for _ in $(seq 1 600); do
  # Captured first, and grep reads a here-string, not a pipe: grep -q stops
  # reading at its first match, and under pipefail the writer's SIGPIPE
  # would fail the test.
  status_json=$("${ctl[@]}" status "$job" --format=json 2>/dev/null || true)
  if grep -qE '"step": *"[1-9]' <<<"$status_json"; then
    first_step_s=$((SECONDS - t1)); break
  fi
  sleep 0.2
done
[ -n "$first_step_s" ] || { log "$job made no step"; "${DC[@]}" logs --tail=50; exit 1; }
log "$job: first step done ${first_step_s}s after up"
out=$(timeout 600 "${ctl[@]}" watch "$job" 2>&1) || { echo "$out"; "${DC[@]}" logs --tail=50; exit 1; }
echo "$out" | tail -25
grep -q "): succeeded" <<<"$out" || { log "the job did not succeed"; exit 1; }
"${ctl[@]}" report "$job" --format=json | grep '"phase": "lora"' >/dev/null \
  || { log "$job never reached the LoRA phase"; exit 1; }
log "$job switched to LoRA (frozen weights on worker-reram, the rest on worker-systolic)"
# The live page through the published port: the job, switched.
page=$(curl -sS --max-time 20 "http://127.0.0.1:$HPT_COORDINATOR_HTTP_PORT/jobs/$job" || true)
grep -q "<g class=\"switch\" data-step=" <<<"$page" \
  || { log "the coordinator's page of $job (port $HPT_COORDINATOR_HTTP_PORT) shows no switch"; exit 1; }
log "the page of $job is served on the published port $HPT_COORDINATOR_HTTP_PORT"
up_s=$((SECONDS - t1))

# Prometheus' HTTP API, from inside the compose network.
query() {
  "${DC[@]}" exec -T prometheus wget -qO- \
    "http://localhost:$HPT_PROMETHEUS_PORT/api/v1/query?query=$1" 2>/dev/null || true
}
# The value of a one-sample instant vector ("" when there is none).
value() { query "$1" | grep -o '"value":\[[^]]*\]' | grep -o '"[0-9.]*"\]$' | tr -d '"]' || true; }
ok=""
for _ in $(seq 1 30); do
  targets=$(value 'count(up==1)')
  loss=$(value "count(hpt_job_loss{job_id=\"$job\"})")
  phase=$(value "count(hpt_job_phase{job_id=\"$job\"})")
  if [ "${targets:-0}" = "4" ] && [ -n "$loss" ] && [ -n "$phase" ]; then ok=1; break; fi
  sleep 2
done
[ -n "$ok" ] || { log "Prometheus: targets up ${targets:-0}/4, loss series '${loss}', phase series '${phase}'"; exit 1; }
log "Prometheus scraped all 4 processes; $job's hpt_job_loss and hpt_job_phase series are there"
# Faults across containers, each on a full-parameter job long enough to be
# hit mid-way (checkpoints every 20 steps).
container() { "${DC[@]}" ps -q "$1"; }
step_of() {
  local json
  json=$("${ctl[@]}" status "$1" --format=json 2>/dev/null || true)
  grep -o -m1 '"step": "\?[0-9]*' <<<"$json" | grep -o '[0-9]*$' || echo 0
}
long_job() {
  local out
  out=$("${ctl[@]}" submit --name="$1" --preset=tiny --stations=16 --time_steps=4096 --epochs=3 \
    --batch_size=16 --mode=full --checkpoint_every=20)
  grep -o -m1 'job-[0-9]*' <<<"$out"
}
wait_for_step() {
  for _ in $(seq 1 600); do
    [ "$(step_of "$1")" -ge "$2" ] && return 0
    sleep 0.2
  done
  return 1
}
# Watches JOB to its end (10 min at most); prints its summary.
# The whole summary: its first line says how the job ended, and each
# recovery adds lines.
finish() { timeout 600 "${ctl[@]}" watch "$1" 2>&1 || true; }
fault_report() {  # NAME JOB FAULT_TIME SUMMARY
  grep -q "): succeeded" <<<"$4" || { echo "$4"; log "fault '$1': $2 did not succeed"; exit 1; }
  log "fault '$1': $2 succeeded $(( $(date +%s) - $3 ))s after the fault; $(echo "$4" | grep -m1 'recovery' | sed 's/^ *//')"
}

job=$(long_job kill-worker)
wait_for_step "$job" 30
fault=$(date +%s)
docker kill "$(container worker-gpu)" >/dev/null
"${DC[@]}" up -d --no-build worker-gpu >/dev/null 2>&1   # a fresh GPU worker
fault_report "docker kill worker-gpu" "$job" "$fault" "$(finish "$job")"

job=$(long_job disconnect)
wait_for_step "$job" 30
network=$(docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}' "$(container worker-gpu)")
fault=$(date +%s)
docker network disconnect "$network" "$(container worker-gpu)"
sleep 10
docker network connect --alias worker-gpu "$network" "$(container worker-gpu)"
summary=$(finish "$job")
if grep -q "): succeeded" <<<"$summary"; then
  fault_report "worker-gpu off the network for 10 s" "$job" "$fault" "$summary"
elif grep -q "): failed" <<<"$summary" && grep -q "worker-gpu" <<<"$summary"; then
  log "fault 'worker-gpu off the network for 10 s': $job failed naming the worker, $(( $(date +%s) - fault ))s after the fault"
else
  echo "$summary"; log "fault 'network': $job neither recovered nor failed naming worker-gpu"; exit 1
fi

job=$(long_job restart-coordinator)
wait_for_step "$job" 30
fault=$(date +%s)
docker kill "$(container coordinator)" >/dev/null
"${DC[@]}" up -d --no-build coordinator >/dev/null 2>&1
for _ in $(seq 1 120); do "${ctl[@]}" list >/dev/null 2>&1 && break; sleep 1; done
fault_report "coordinator killed and started again on its state volume" "$job" "$fault" "$(finish "$job")"

"${DC[@]}" down -v >/dev/null 2>&1

# Secure mode, as the README gives it: mutual TLS between the containers,
# tokens on the JobService.
/usr/bin/python3 deploy/launch.py pki --dir=deploy/tls >/dev/null
DC=("${DC[@]}" -f deploy/docker-compose.secure.yml)
"${DC[@]}" up -d --no-build >/dev/null 2>&1 || { "${DC[@]}" up -d --no-build; exit 1; }
secure=("${ctl[@]}" --tls_ca=deploy/tls/ca.pem --token_file=deploy/tls/token)
for _ in $(seq 1 120); do "${secure[@]}" list >/dev/null 2>&1 && break; sleep 1; done
out=$(timeout 600 "${secure[@]}" submit --name=compose-secure --preset=tiny --stations=16 \
  --time_steps=512 --epochs=3 --check_window_steps=5 --loss_threshold=0.5 --weight_threshold=0.5 \
  --lora_rank=4 --watch 2>&1) || { echo "$out"; exit 1; }
grep -q "): succeeded" <<<"$out" || { echo "$out"; log "secure mode: the job did not succeed"; exit 1; }
if "${ctl[@]}" --tls_ca=deploy/tls/ca.pem list >/dev/null 2>&1; then
  log "secure mode: a call without a token was accepted"; exit 1
fi
log "secure mode: a job succeeded over mutual TLS with a token; no token was refused"
"${DC[@]}" down -v >/dev/null 2>&1
trap - EXIT
log "passed: images ${build_s}s, up to first step ${first_step_s}s, up to succeeded ${up_s}s, ${SECONDS}s in all"
