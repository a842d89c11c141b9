#include "coordinator/training/baseline_probe_call.h"

#include "absl/strings/str_cat.h"

namespace hpt {

std::vector<MeasuredBaseline> ProbeJobBaselines(WorkerClient& gpu, const ModelConfig& model,
                                                int64_t batch, int64_t tokens, int64_t steps,
                                                uint64_t seed) {
  ProbeBaselinesRequest request;
  *request.mutable_model() = model;
  request.set_batch(batch);
  request.set_tokens(tokens);
  request.set_steps(steps);
  request.set_seed(seed);
  absl::StatusOr<ProbeBaselinesResponse> response = gpu.ProbeBaselines(request);
  if (response.ok()) {
    return {response->baselines().begin(), response->baselines().end()};
  }
  std::vector<MeasuredBaseline> failed;
  for (GpuBaseline::Name name :
       {GpuBaseline::paper, GpuBaseline::fused, GpuBaseline::graph, GpuBaseline::bf16}) {
    MeasuredBaseline m;
    m.set_baseline(name);
    m.set_device(gpu.address());
    m.set_not_run(absl::StrCat("not run: the probe on ", gpu.address(), " failed: ",
                               response.status().message()));
    failed.push_back(std::move(m));
  }
  return failed;
}

}  // namespace hpt
