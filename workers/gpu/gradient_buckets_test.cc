// GradientBuckets on a real two-rank Gloo group (two threads, one
// in-memory store): buckets all-reduce from the backward's hooks, in
// order, and leave every gradient equal to one flat all-reduce's.
#include "workers/gpu/gradient_buckets.h"

#include <torch/torch.h>

#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// Three linear layers; rank r's input is its own, so its gradients differ.
struct Net {
  explicit Net(int64_t seed) {
    torch::manual_seed(seed);
    for (int i = 0; i < 3; ++i) layers.push_back(torch::nn::Linear(64, 64));
  }
  torch::Tensor Loss(int rank) {
    torch::Tensor x = torch::full({4, 64}, 0.1 * (rank + 1));
    for (auto& l : layers) x = torch::tanh(l->forward(x));
    return x.pow(2).mean();
  }
  std::vector<torch::Tensor> Parameters() {
    std::vector<torch::Tensor> p;
    for (auto& l : layers) {
      for (const auto& t : l->parameters()) p.push_back(t);
    }
    return p;
  }
  std::vector<torch::nn::Linear> layers;
};

c10::intrusive_ptr<c10d::Backend> Group(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(20));
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, 2, options);
}

TEST(GradientBucketsTest, BucketsReduceDuringTheBackwardAndMatchOneFlatAllReduce) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::vector<torch::Tensor>> bucketed(2), flat(2);
  int buckets[2] = {0, 0}, launched[2] = {0, 0};
  // Built here, one after another: the ranks' threads would share
  // LibTorch's one CPU generator, and their draws interleave.
  std::vector<Net> nets_a, nets_c;
  for (int rank = 0; rank < 2; ++rank) {
    nets_a.emplace_back(1);
    nets_c.emplace_back(1);
  }
  std::thread ranks[2];
  for (int rank = 0; rank < 2; ++rank) {
    ranks[rank] = std::thread([&, rank] {
      auto group = Group(store, rank);
      // Bucketed: 16 KiB buckets over 3 x (16 KiB + 256 B) of parameters.
      Net& a = nets_a[rank];
      GradientBuckets b(group, a.Parameters(), 16 << 10, 16 << 10);
      b.Arm();
      a.Loss(rank).backward();
      launched[rank] = b.launched_during_backward();
      b.Finish();
      buckets[rank] = b.num_buckets();
      for (auto& p : a.Parameters()) bucketed[rank].push_back(p.grad().clone());
      // One flat all-reduce after the backward, as task calls reduce.
      Net& c = nets_c[rank];
      c.Loss(rank).backward();
      std::vector<torch::Tensor> grads;
      for (auto& p : c.Parameters()) grads.push_back(p.grad().view(-1));
      std::vector<torch::Tensor> one{torch::cat(grads)};
      group->allreduce(one)->wait();
      int64_t offset = 0;
      for (auto& p : c.Parameters()) {
        flat[rank].push_back(one[0].narrow(0, offset, p.numel()).view_as(p).clone());
        offset += p.numel();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_GE(buckets[rank], 3);
    // Every gradient arrived in the backward, so every bucket was launched
    // from a hook, none left for Finish.
    EXPECT_EQ(launched[rank], buckets[rank]);
    ASSERT_EQ(bucketed[rank].size(), flat[rank].size());
    for (size_t i = 0; i < flat[rank].size(); ++i) {
      EXPECT_TRUE(torch::equal(bucketed[rank][i], flat[rank][i])) << "rank " << rank << " " << i;
    }
  }
  for (size_t i = 0; i < flat[0].size(); ++i) EXPECT_TRUE(torch::equal(bucketed[0][i], bucketed[1][i]));
}

TEST(GradientBucketsTest, DisarmedHooksLaunchNothing) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::thread ranks[2];
  int launched[2] = {-1, -1};
  for (int rank = 0; rank < 2; ++rank) {
    ranks[rank] = std::thread([&, rank] {
      auto group = Group(store, rank);
      Net a(2);
      GradientBuckets b(group, a.Parameters(), 16 << 10, 16 << 10);
      a.Loss(rank).backward();  // not armed: a task call's backward
      launched[rank] = b.launched_during_backward();
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(launched[0], 0);
  EXPECT_EQ(launched[1], 0);
}

}  // namespace
}  // namespace hpt
