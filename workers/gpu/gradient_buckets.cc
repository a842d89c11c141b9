#include "workers/gpu/gradient_buckets.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace hpt {

GradientBuckets::GradientBuckets(c10::intrusive_ptr<c10d::Backend> group,
                                 std::vector<torch::Tensor> params, int64_t bucket_bytes,
                                 int64_t first_bucket_bytes)
    : group_(std::move(group)) {
  for (torch::Tensor& p : params) {
    if (p.requires_grad()) params_.push_back(std::move(p));
  }
  bucket_of_.resize(params_.size());
  // Reverse order: the backward reaches the last parameters first.
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const int64_t cap = buckets_.size() <= 1 ? first_bucket_bytes : bucket_bytes;
    if (buckets_.empty() || (bytes > 0 && bytes + int64_t(params_[k].nbytes()) > cap)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().params.push_back(k);
    bucket_of_[k] = buckets_.size() - 1;
    bytes += int64_t(params_[k].nbytes());
  }
  for (size_t k = 0; k < params_.size(); ++k) {
    std::shared_ptr<torch::autograd::Node> node = torch::autograd::impl::grad_accumulator(params_[k]);
    hooks_.push_back(node->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, k](const torch::autograd::variable_list& outputs,
                  const torch::autograd::variable_list&) {
          Ready(k);
          return outputs;
        })));
    accumulators_.push_back(std::move(node));
  }
}

GradientBuckets::~GradientBuckets() {
  for (size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(hooks_[k]);
}

void GradientBuckets::Arm() {
  absl::MutexLock lock(&mu_);
  armed_ = true;
  launched_ = 0;
  next_ = 0;
  for (Bucket& b : buckets_) {
    b.ready = 0;
    b.work.reset();
  }
}

void GradientBuckets::Disarm() {
  absl::MutexLock lock(&mu_);
  armed_ = false;
}

int GradientBuckets::launched_during_backward() const {
  absl::MutexLock lock(&mu_);
  return launched_;
}

void GradientBuckets::Launch(Bucket& bucket) {
  std::vector<torch::Tensor> grads;
  for (size_t k : bucket.params) {
    torch::Tensor p = params_[k];  // a handle: its gradient is the parameter's
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad().view(-1));
  }
  std::vector<torch::Tensor> flat{torch::cat(grads)};
  bucket.work = group_->allreduce(flat);
  bucket.flat = flat[0];
}

void GradientBuckets::Ready(size_t param) {
  // On the autograd engine's thread: the accumulator has just written the
  // parameter's gradient.
  absl::MutexLock lock(&mu_);
  if (!armed_) return;
  ++buckets_[bucket_of_[param]].ready;
  // Collectives must be issued in one order on every rank: a full bucket
  // waits for the buckets before it, as DDP's do.
  while (next_ < buckets_.size() &&
         buckets_[next_].ready == int(buckets_[next_].params.size())) {
    Launch(buckets_[next_++]);
    ++launched_;
  }
}

void GradientBuckets::Finish() {
  absl::MutexLock lock(&mu_);
  for (; next_ < buckets_.size(); ++next_) Launch(buckets_[next_]);
  for (Bucket& b : buckets_) {
    b.work->wait();
    int64_t offset = 0;
    for (size_t k : b.params) {
      torch::Tensor p = params_[k];
      const int64_t n = p.numel();
      p.mutable_grad().copy_(b.flat.narrow(0, offset, n).view_as(p));
      offset += n;
    }
    b.work.reset();
    b.flat = torch::Tensor();
  }
  armed_ = false;
}

}  // namespace hpt
