// ProbeJobBaselines: asks a GPU worker to time a job's full-phase step
// under each GPU baseline (workers/gpu/baseline_probe.h) and hands back what it
// measured. A worker that cannot probe gives each baseline a `not_run`
// reason instead, so the report says why a row is missing.
//
//   std::vector<MeasuredBaseline> m = ProbeJobBaselines(*gpu, model, 16, 57, 10, 42);
#ifndef HPT_COORDINATOR_TRAINING_BASELINE_PROBE_CALL_H_
#define HPT_COORDINATOR_TRAINING_BASELINE_PROBE_CALL_H_

#include <cstdint>
#include <vector>

#include "coordinator/dispatch/worker_client.h"
#include "proto/common.pb.h"
#include "proto/work.pb.h"

namespace hpt {

std::vector<MeasuredBaseline> ProbeJobBaselines(WorkerClient& gpu, const ModelConfig& model,
                                                int64_t batch, int64_t tokens, int64_t steps,
                                                uint64_t seed);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_BASELINE_PROBE_CALL_H_
