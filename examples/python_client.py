#!/usr/bin/python3
"""An example HpT client in Python: submit a job, watch it, read its report.

Uses Debian's python3-grpcio and python3-grpc-tools; the stubs are generated
from the repository's proto/ files on first use (into --stubs_dir).

  /usr/bin/python3 examples/python_client.py --coordinator=127.0.0.1:50051 \
      --spec='model { preset: "tiny" } training { epochs: 3 }'

Prints a line as each epoch finishes, then its report; exits 0 when
the job succeeded, 1 when it failed or was cancelled, 2 on bad usage.
"""
import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_stubs(stubs_dir, proto_root):
    """Generates proto/*_pb2*.py under stubs_dir (once) and imports them."""
    marker = os.path.join(stubs_dir, "proto", "job_service_pb2_grpc.py")
    if not os.path.exists(marker):
        from grpc_tools import protoc
        os.makedirs(stubs_dir, exist_ok=True)
        protos = [os.path.join(proto_root, "proto", p)
                  for p in ("work.proto", "common.proto", "job_service.proto")]
        rc = protoc.main(["protoc", f"-I{proto_root}", f"--python_out={stubs_dir}",
                          f"--grpc_python_out={stubs_dir}"] + protos)
        if rc != 0:
            sys.exit(f"generating stubs from {proto_root}/proto failed (protoc exit {rc})")
    sys.path.insert(0, stubs_dir)
    from proto import job_service_pb2, job_service_pb2_grpc  # noqa: E402
    return job_service_pb2, job_service_pb2_grpc


def report(pb, job):
    h = job.hpt
    lines = [f"job {job.job_id} ({job.name}): {pb.JobState.Name(job.state).lower()}",
             f"  steps {job.progress.step}, wall {job.progress.elapsed_s:.1f} s, "
             f"placement {pb.Placement.Name.Name(h.placement or pb.Placement.gpu)}"]
    if h.switch_step >= 0:
        lines.append(f"  switched to LoRA at step {h.switch_step} "
                     f"({h.lora_trainable_parameters} trainable parameters)")
    else:
        lines.append("  no switch: full-parameter throughout")
    for e in h.events:
        verdict = 'another trial' if e.significant else 'switch'
        if e.kind == pb.PhaseEvent.TRIAL_END and e.trial_detail:
            lines.append(f"  margin test at step {e.iteration}: {e.trial_detail} -> {verdict}")
        elif e.kind == pb.PhaseEvent.TRIAL_END:
            lines.append(f"  t-test at step {e.iteration}: t {e.t:.3f}, dof {e.dof:.0f}, "
                         f"p {e.p:.4g} -> {verdict}")
        elif e.kind == pb.PhaseEvent.SWITCH:
            lines.append(f"  switch after step {e.iteration}: {e.reason}")
    for c in h.phases:
        lines.append(f"  phase {c.phase:<6} simulated {c.simulated_s:.4g} s, "
                     f"energy {c.energy_j:.4g} J")
    cmp = h.comparison
    lines.append(f"  HpT vs GPU-only: time {cmp.time_ratio:.3g}x, energy {cmp.energy_ratio:.3g}x")
    q = job.test_metrics
    if q.values:
        lines.append(f"  test RMSE {q.rmse:.4g}  MAE {q.mae:.4g}  NSE {q.nse:.4f}  R2 {q.r2:.4f}")
    if job.error:
        lines.append(f"  error: {job.error}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description="Submit an HpT job, watch it, print its report.")
    parser.add_argument("--coordinator", default="127.0.0.1:50051")
    parser.add_argument("--spec", default='name: "python-example" model { preset: "tiny" } '
                                          'training { epochs: 3 }',
                        help="the job spec in protobuf text format (hpt.JobSpec)")
    parser.add_argument("--stubs_dir", default=os.path.join(tempfile.gettempdir(), "hpt-python-stubs"))
    parser.add_argument("--proto_root", default=ROOT,
                        help="folder holding proto/ (the repository root)")
    parser.add_argument("--timeout_s", type=float, default=30)
    args = parser.parse_args()

    import grpc
    pb, rpc = load_stubs(args.stubs_dir, args.proto_root)
    channel = grpc.insecure_channel(args.coordinator)
    stub = rpc.JobServiceStub(channel)
    try:
        job = stub.SubmitJob(pb.SubmitJobRequest(spec_text=args.spec), timeout=args.timeout_s)
    except grpc.RpcError as e:
        print(f"submit failed: {e.code().name}: {e.details()}", file=sys.stderr)
        return 2 if e.code() == grpc.StatusCode.INVALID_ARGUMENT else 1
    print(f"submitted {job.job_id} ({job.name})")
    finished = 0  # epochs whose mean loss was printed
    for update in stub.WatchJob(pb.WatchJobRequest(job_id=job.job_id)):
        p = update.progress
        # One line per finished epoch: epoch_losses grows by one at its end.
        while finished < len(update.epoch_losses):
            finished += 1
            print(f"  epoch {finished}/{p.epochs} done  step {p.step}/{p.total_steps}  "
                  f"loss {update.epoch_losses[finished - 1]:.4f}  "
                  f"phase {pb.TrainingPhase.Name.Name(update.hpt.phase or pb.TrainingPhase.full)}")
    job = stub.GetJob(pb.GetJobRequest(job_id=job.job_id), timeout=args.timeout_s)
    print(report(pb, job))
    return 0 if job.state == pb.SUCCEEDED else 1


if __name__ == "__main__":
    sys.exit(main())
