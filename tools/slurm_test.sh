#!/usr/bin/env bash
# ./hpt slurm-test: HpT on a real Slurm cluster in containers, submitted as
# a scientist submits it. Builds the runtime image (tools/runtime_image.sh;
# --reuse-image keeps the hpt:latest that ./hpt compose-test just built)
# and, over it, a Slurm node image with Debian's slurm-wlm and MUNGE
# (tests/slurm_cluster/); starts slurmctld (also the login node) and three
# slurmd nodes on a private network (node1 and node2 each with one GPU as
# GRES, node3 a CPU node) with a shared volume at /shared; then, with
# sbatch and deploy/slurm/hpt.sbatch:
#   1. a tiny HpT job through the phase switch succeeds, its workers on at
#      least two nodes (read from the job's record of worker addresses);
#   2. a node holding a GPU worker is killed mid-run (docker kill): Slurm
#      requeues the job; the node comes back (as a spare would take its
#      place) and the job resumes from its checkpoint and succeeds;
#   3. the batch job is requeued mid-run (scontrol requeue): it starts again
#      on the shared directory and the coordinator resumes the same job from
#      its checkpoint;
#   4. scancel mid-run leaves no HpT process on any node;
#   5. secure mode (HPT_TLS_DIR, certificates from deploy/make-certs naming
#      the nodes): the job succeeds over mutual TLS with a certificate per
#      role, and hptctl without a token is refused on the login node.
# hptctl runs on the login node throughout. Prints timings; exits non-zero
# on any failure. Without a Docker engine it prints one line and exits 3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
log() { printf '\033[1mslurm-test:\033[0m %s\n' "$*" >&2; }

if ! docker info >/dev/null 2>&1; then
  echo "slurm: not tested (no Docker engine answers here)"
  exit 3
fi
NET=hpt-slurm-test
VOL=hpt-slurm-test-shared
CTLD=hpt-slurm-ctld
NODES=(node1 node2 node3)
cleanup() {
  docker rm -f "$CTLD" "${NODES[@]/#/hpt-slurm-}" >/dev/null 2>&1 || true
  docker network rm "$NET" >/dev/null 2>&1 || true
  docker volume rm "$VOL" >/dev/null 2>&1 || true
}
fail() {
  log "FAILED: $*"
  docker exec "$CTLD" sh -c 'for f in /shared/*/hpt-*.out /shared/*/logs/coordinator.log; do
    echo "== $f"; tail -n 25 "$f"; done' 2>/dev/null || true
  exit 1
}
cleanup
trap cleanup EXIT

t0=$SECONDS
if [ "${1:-}" != --reuse-image ] || ! docker image inspect hpt:latest >/dev/null 2>&1; then
  tools/runtime_image.sh
fi
docker build -q -t hpt-slurm:latest tests/slurm_cluster >/dev/null
build_s=$((SECONDS - t0))
log "images built in ${build_s}s"

t1=$SECONDS
docker network create "$NET" >/dev/null
docker volume create "$VOL" >/dev/null
start_node() {  # container-name hostname daemon
  docker run -d --name "$1" --hostname "$2" --network "$NET" --network-alias "$2" \
    -v "$VOL:/shared" -v "$ROOT/deploy:/opt/hpt/deploy:ro" hpt-slurm:latest "$3" >/dev/null
}
start_node "$CTLD" slurmctld slurmctld
for n in "${NODES[@]}"; do start_node "hpt-slurm-$n" "$n" slurmd; done
login() { docker exec "$CTLD" "$@"; }
idle_nodes() { login sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l; }
for _ in $(seq 60); do [ "$(idle_nodes)" = 3 ] && break; sleep 1; done
[ "$(idle_nodes)" = 3 ] || fail "the cluster's three nodes are not idle after 60 s: $(login sinfo 2>&1)"
log "cluster up in $((SECONDS - t1))s: $(login sinfo -h -o '%P %D %N' | tr '\n' ';')"

# A tiny HpT job that switches within its epochs (the demo's loose checks).
JOB=(--preset=tiny --stations=16 --time_steps=512 --batch_size=16 --lr=0.002
     --check_window_steps=5 --loss_threshold=0.5 --weight_threshold=0.5 --lora_rank=4
     --gpu_workers=2)
SBATCH_EXTRA=""
submit() {  # run-name epochs -> slurm job id
  login mkdir -p "/shared/$1"
  login sh -c "cd /shared/$1 && sbatch --parsable $SBATCH_EXTRA /opt/hpt/deploy/slurm/hpt.sbatch \
    /shared/$1 --name=$1 --epochs=$2 ${JOB[*]}" | cut -d';' -f1
}
in_queue() { [ -n "$(login squeue -h -j "$1" -o %i 2>/dev/null)" ]; }
wait_done() {  # slurm-id seconds
  for _ in $(seq "$2"); do in_queue "$1" || return 0; sleep 1; done
  fail "slurm job $1 still queued or running after $2 s"
}
# The training step of the run's HpT job, read from the login node.
hpt_step() {
  local at id
  at=$(login cat "/shared/$1/coordinator" 2>/dev/null) || { echo 0; return; }
  id=$(login cat "/shared/$1/job_id" 2>/dev/null) || { echo 0; return; }
  [ -n "$id" ] || { echo 0; return; }
  login hptctl --coordinator="$at" --timeout_s=3 --format=json status "$id" 2>/dev/null |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin).get("progress", {}).get("step", 0)))' \
    2>/dev/null || echo 0
}
wait_step() {  # run-name step seconds
  for _ in $(seq "$3"); do [ "$(hpt_step "$1")" -ge "$2" ] && return 0; sleep 1; done
  fail "run $1 did not reach step $2 in $3 s"
}
# Slurm holds a requeued job about two minutes; once every component is
# pending again, release it.
release() {
  for _ in $(seq 90); do
    login squeue -h -j "$1" -o %T 2>/dev/null | grep -qv PENDING || break
    sleep 1
  done
  login scontrol update JobId="$1" StartTime=now >/dev/null 2>&1 || true
}
record() { docker cp "$CTLD:/shared/$1/job.json" "$ROOT/build-out/slurm-$1.json" >/dev/null 2>&1 &&
           cat "$ROOT/build-out/slurm-$1.json"; }
# The run's newest recovery, as its job record has it; empty for none.
last_recovery() {
  record "$1" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("recoveries", [])[-1:]:
    print("back to step", r.get("from_step", 0), "-", r.get("cause", "")[:120])'
}
restarts() { login scontrol show job "$1" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p' | head -1; }
mkdir -p build-out

# 1. Across nodes.
t2=$SECONDS
id=$(submit spread 6)
wait_done "$id" 300
login grep -q "ended SUCCEEDED" "/shared/spread/hpt-$id.out" || fail "run spread did not succeed"
record spread | python3 -c '
import json, sys
job = json.load(sys.stdin)
hosts = sorted({w.rsplit(":", 1)[0] for w in job.get("workers", [])})
assert job["state"] == "SUCCEEDED", job["state"]
assert len(hosts) >= 2, f"workers on {hosts}"
switch = int(job.get("hpt", {}).get("switch_step", 0))
assert switch > 0, "the job did not switch to LoRA"
print(len(job["workers"]), "workers on", ", ".join(hosts) + "; switched to LoRA at step", switch)' \
  >build-out/slurm-spread.txt || fail "the job's record does not show its workers on two nodes and a switch"
log "1. succeeded in $((SECONDS - t2))s; $(cat build-out/slurm-spread.txt)"

# 2. A GPU node killed mid-run.
id=$(submit failover 40)
wait_step failover 30 240
docker kill hpt-slurm-node2 >/dev/null
killed=$SECONDS
# Either the coordinator goes on without node2's worker and the job ends
# before Slurm marks the node down, or Slurm requeues the job (it does so
# for a heterogeneous job when any of its nodes fails).
for _ in $(seq 120); do
  in_queue "$id" || break
  [ "$(restarts "$id")" -ge 1 ] 2>/dev/null && break
  sleep 1
done
how="the coordinator went on without it"
if in_queue "$id"; then
  [ "$(restarts "$id")" -ge 1 ] 2>/dev/null ||
    fail "the job neither ended nor was requeued within 120 s of node2's failure"
  how="slurm requeued the job $((SECONDS - killed))s later"
  # The node returns (a spare node would do as well); release the requeue's hold.
  docker start hpt-slurm-node2 >/dev/null
  for _ in $(seq 90); do login sinfo -h -n node2 -o %t | grep -q idle && break; sleep 1; done
  release "$id"
fi
wait_done "$id" 400
login grep -q "ended SUCCEEDED" "/shared/failover/hpt-$id.out" || fail "run failover did not succeed after node2 was killed"
recovery=$(last_recovery failover)
log "2. node2 killed at step >= 30; $how; succeeded $((SECONDS - killed))s after the kill; recovery: ${recovery:-none recorded}"
[ -n "$recovery" ] || fail "the failover job's record names no recovery"
docker start hpt-slurm-node2 >/dev/null 2>&1 || true
for _ in $(seq 90); do [ "$(idle_nodes)" = 3 ] && break; sleep 1; done
[ "$(idle_nodes)" = 3 ] || fail "node2 did not come back: $(login sinfo 2>&1)"

# 3. Requeued mid-run: the same job resumes from its checkpoint.
t4=$SECONDS
id=$(submit requeue 40)
wait_step requeue 30 240
login scontrol requeue "$id"
release "$id"
wait_done "$id" 600
login grep -q "restart 1" "/shared/requeue/hpt-$id.out" || fail "run requeue did not start again"
login grep -q "ended SUCCEEDED" "/shared/requeue/hpt-$id.out" || fail "run requeue did not succeed"
resumed=$(last_recovery requeue)
log "3. requeued at step >= 30; succeeded $((SECONDS - t4))s after submission; recovery: ${resumed:-none}"
[ -n "$resumed" ] || fail "the requeued job's record names no resume"

# 4. scancel leaves nothing behind.
id=$(submit cancel 400)
wait_step cancel 10 240
login scancel "$id"
wait_done "$id" 120
left=""
for _ in $(seq 30); do
  left=$(for n in "${NODES[@]}"; do docker exec "hpt-slurm-$n" pgrep -a 'hpt_' || true; done)
  [ -z "$left" ] && break
  sleep 1
done
[ -z "$left" ] || fail "processes left after scancel: $left"
log "4. scancel: no hpt process on any node"

# 5. Secure mode: a certificate per role naming the nodes, and a token.
t5=$SECONDS
login sh -c 'HPT_CERT_DAYS=2 /opt/hpt/deploy/make-certs /shared/tls node1 node2 node3 >/dev/null &&
  tok=$(openssl rand -hex 24) && printf "%s tester admin\n" "$tok" >/shared/tls/coordinator/tokens &&
  printf "%s\n" "$tok" >/shared/tls/token'
SBATCH_EXTRA="--export=ALL,HPT_TLS_DIR=/shared/tls"
id=$(submit secure 30)
SBATCH_EXTRA=""
for _ in $(seq 240); do login test -s /shared/secure/job_id && break; sleep 1; done
at=$(login cat /shared/secure/coordinator)
refused=$(login hptctl --coordinator="$at" --tls_ca=/shared/tls/ca.pem --timeout_s=5 list 2>&1 || true)
echo "$refused" | grep -q UNAUTHENTICATED || fail "hptctl without a token was not refused: $refused"
wait_done "$id" 300
login grep -q "ended SUCCEEDED" "/shared/secure/hpt-$id.out" || fail "run secure did not succeed"
login grep -q "without TLS" /shared/secure/logs/coordinator.log &&
  fail "the secure run's coordinator served without TLS"
log "5. secure mode: succeeded over mutual TLS in $((SECONDS - t5))s; no token: refused"
log "passed: images ${build_s}s, ${SECONDS}s in all"
