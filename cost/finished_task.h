// FinishedTask: one task a worker has answered, as the cost ledger and the
// work recorder take it in: where it ran, what it was, the worker's cost
// report (with its work) and the bytes it moved. The coordinator's runners
// hand each to a TaskSink as it finishes.
//
//   TaskSink sink = [&](const FinishedTask& t) { recorder.Measure(t); };
//   sink(MakeFinishedTask(worker->address(), DeviceKind::gpu, "forward", response.cost()));
#ifndef HPT_COST_FINISHED_TASK_H_
#define HPT_COST_FINISHED_TASK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "proto/common.pb.h"

namespace hpt {

struct FinishedTask {
  std::string worker;  // the worker's address ("" where none: a test's)
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  std::string type;    // load, forward, backward, update
  CostReport cost;
  int64_t bytes_in = 0;   // activations or gradients sent to the worker
  int64_t bytes_out = 0;  // returned by it
  // The timeline resource the task occupies: the worker ("" = its
  // address), or a part of it that works on its own (a ReRAM segment's
  // layers sit in tiles of their own).
  std::string resource;
  // Samples it processes independently: the cost timeline pipelines a
  // chain of such tasks sample by sample (1: as one piece).
  int64_t samples = 1;
};
using TaskSink = std::function<void(const FinishedTask&)>;

// A task of `kind` and `type` on `worker` with its cost and the bytes it
// moved, on the worker's own timeline resource, as one piece.
inline FinishedTask MakeFinishedTask(std::string worker, DeviceKind::Name kind, std::string type,
                                     CostReport cost, int64_t bytes_in = 0, int64_t bytes_out = 0) {
  FinishedTask t;
  t.worker = std::move(worker);
  t.kind = kind;
  t.type = std::move(type);
  t.cost = std::move(cost);
  t.bytes_in = bytes_in;
  t.bytes_out = bytes_out;
  return t;
}

}  // namespace hpt

#endif  // HPT_COST_FINISHED_TASK_H_
