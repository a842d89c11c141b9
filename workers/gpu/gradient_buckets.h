// GradientBuckets: a data-parallel rank's gradients averaged over its group
// as the backward produces them, bucket by bucket, so the all-reduce of the
// last layers' gradients runs while the backward still computes the first
// layers'. This is DistributedDataParallel's scheme (PyTorch docs,
// "DistributedDataParallel", bucket_cap_mb; Li et al., "PyTorch
// Distributed", VLDB 2020, Sec. 3.2.3): parameters in reverse order, a hook
// on each one's gradient accumulator, and a bucket's all-reduce launched
// once every gradient in it is there.
//
// Each element is summed over the ranks exactly as one flat all-reduce of
// every gradient sums it (two ranks: bit for bit; Gloo's ring may order a
// sum of three or more ranks differently by a buffer's size).
//
// Internal to the GPU executor: includes LibTorch. Armed for one backward
// at a time (a run's), so the task calls' backward, which reduces its one
// flat buffer itself, is not reduced twice.
#ifndef HPT_WORKERS_GRADIENT_BUCKETS_H_
#define HPT_WORKERS_GRADIENT_BUCKETS_H_

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace hpt {

class GradientBuckets {
 public:
  // DDP's defaults: 25 MiB a bucket, the first (the last layers') 1 MiB so
  // that the first all-reduce starts early.
  static constexpr int64_t kBucketBytes = 25 << 20, kFirstBucketBytes = 1 << 20;

  // Hooks on `params`' accumulators (those that require a gradient), in
  // buckets of about `bucket_bytes` (the first `first_bucket_bytes`).
  GradientBuckets(c10::intrusive_ptr<c10d::Backend> group, std::vector<torch::Tensor> params,
                  int64_t bucket_bytes = kBucketBytes,
                  int64_t first_bucket_bytes = kFirstBucketBytes);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before a backward: the hooks launch the buckets it fills.
  void Arm();
  // After it: launches the buckets it did not fill (a parameter with no
  // gradient gives zeros), waits for every all-reduce in order and writes
  // the averaged gradients back. Disarms.
  void Finish();
  // After a backward that threw: the hooks stop launching (a collective
  // already launched is left to the broken group).
  void Disarm();

  int num_buckets() const { return int(buckets_.size()); }
  // Buckets the last backward launched from its hooks, before Finish.
  int launched_during_backward() const;

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    int ready = 0;
    torch::Tensor flat;
    c10::intrusive_ptr<c10d::Work> work;
  };
  void Ready(size_t param);
  void Launch(Bucket& bucket);

  c10::intrusive_ptr<c10d::Backend> group_;
  std::vector<torch::Tensor> params_;
  std::vector<size_t> bucket_of_;  // param -> bucket
  std::vector<Bucket> buckets_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hooks_;
  mutable absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  int launched_ ABSL_GUARDED_BY(mu_) = 0;
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;  // the first bucket not launched
};

}  // namespace hpt

#endif  // HPT_WORKERS_GRADIENT_BUCKETS_H_
