// hptctl's usage text: its commands and exit codes (docs/jobs.md documents
// the same).
#ifndef HPT_HPTCTL_USAGE_H_
#define HPT_HPTCTL_USAGE_H_

namespace hpt {

inline constexpr char kUsage[] =
    "hptctl COMMAND [flags]\n"
    "commands:\n"
    "  submit   submit a job from --spec and/or flags (--watch to follow it)\n"
    "  list     [--state=STATE] list jobs, newest first\n"
    "  status   JOB: show a job\n"
    "  watch    JOB: follow a job to its end with a progress bar\n"
    "  cancel   JOB: cancel a job (waits up to 10 s for it to stop)\n"
    "  delete   JOB [--yes]: forget a finished job with its checkpoints, model and\n"
    "           history (asks first)\n"
    "  report   JOB: phases, switch decision, costs, HpT vs GPU-only, metrics;\n"
    "           --format=html --out FILE: the same with plots, one offline page\n"
    "  export   JOB --out FILE.pt: the trained model (LoRA merged): TorchScript with\n"
    "           its forward in the data's units (torch.jit.load), FILE.safetensors and\n"
    "           FILE.json (the model, each station's normalisation, the window)\n"
    "  predict  JOB --input X.npy [--out Y.npy] [--normalised]: the trained model's\n"
    "           output, in the data's units\n"
    "  checkpoints JOB: the job's checkpoints\n"
    "  resume   JOB [--step=N]: queue a failed or cancelled job again from its newest\n"
    "           checkpoint (or the one at step N)\n"
    "  whatif   JOB --set KEY=VALUE ...: the report re-costed under other settings\n"
    "           (docs/cost-model.md lists the keys); no training runs\n"
    "  sweep    JOB --grid KEY=V1,V2,... [--grid ...] [--set ...] [--out PREFIX|DIR]\n"
    "           [--target time=R]: the grids' product as a table (CSV, JSON, SVG plot)\n"
    "  trace    JOB: the job's work record as JSON; --format=chrome [--step=N]\n"
    "           [--out FILE]: a step's simulated timeline for Perfetto/chrome://tracing\n"
    "  probe    JOB [--probe_steps=N]: time the finished job's full-phase step under each\n"
    "           GPU baseline (paper, fused, graph, bf16) on a GPU worker; the report then\n"
    "           shows HpT against each as measured\n"
    "  health   [SERVICE]: grpc.health.v1 status of SERVICE (default hpt.JobService;\n"
    "           hpt.WorkerService at a worker's address) at --coordinator; exit 0 if SERVING\n"
    "exit codes: 0 ok, 1 job failed/cancelled, 2 usage, 3 invalid or refused request,\n"
    "            4 not found, 5 coordinator unreachable, 6 other error";

}  // namespace hpt

#endif  // HPT_HPTCTL_USAGE_H_
