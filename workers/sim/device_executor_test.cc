#include "workers/sim/device_executor.h"

#include <cmath>

#include "common/tensor_codec.h"
#include "devices/work_cost.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/sim/random_tensor.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kRows = 6, kIn = 10, kHidden = 8, kOut = 3;

struct Net {
  HostTensor w1 = RandomTensor({kHidden, kIn}, 1, 0.3f), b1 = RandomTensor({kHidden}, 2, 0.1f);
  HostTensor w2 = RandomTensor({kOut, kHidden}, 3, 0.3f), b2 = RandomTensor({kOut}, 4, 0.1f);
  HostTensor x = RandomTensor({2, kRows / 2, kIn}, 5, 1.0f);
  HostTensor t = RandomTensor({2, kRows / 2, kOut}, 6, 1.0f);
};

LoadParametersHeader Header(bool trainable) {
  LoadParametersHeader h;
  h.set_job_id("j");
  h.mutable_optimizer()->set_type(ADAM);
  h.mutable_optimizer()->set_learning_rate(0.01);
  SegmentSpec& seg = *h.mutable_segment();
  seg.set_name("head");
  SegmentOp* a = seg.add_ops();
  a->set_type(SegmentOp::LINEAR);
  a->set_weight("w1");
  a->set_bias("b1");
  a->set_trainable(trainable);
  seg.add_ops()->set_type(SegmentOp::RELU);
  SegmentOp* b = seg.add_ops();
  b->set_type(SegmentOp::LINEAR);
  b->set_weight("w2");
  b->set_bias("b2");
  b->set_trainable(trainable);
  return h;
}

std::map<std::string, HostTensor> Params(const Net& n) {
  return {{"w1", n.w1}, {"b1", n.b1}, {"w2", n.w2}, {"b2", n.b2}};
}

// Reference forward / backward in double precision.
struct Reference {
  std::vector<double> h, y, gy, gh, gx;
  std::vector<double> gw1, gw2;
};

Reference Compute(const Net& n) {
  Reference r;
  r.h.assign(kRows * kHidden, 0);
  r.y.assign(kRows * kOut, 0);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t o = 0; o < kHidden; ++o) {
      double s = n.b1.data[o];
      for (int64_t k = 0; k < kIn; ++k) s += double(n.x.data[i * kIn + k]) * n.w1.data[o * kIn + k];
      r.h[i * kHidden + o] = std::max(0.0, s);
    }
    for (int64_t o = 0; o < kOut; ++o) {
      double s = n.b2.data[o];
      for (int64_t k = 0; k < kHidden; ++k) s += r.h[i * kHidden + k] * n.w2.data[o * kHidden + k];
      r.y[i * kOut + o] = s;
    }
  }
  r.gy.resize(r.y.size());
  for (size_t e = 0; e < r.y.size(); ++e) r.gy[e] = 2.0 * (r.y[e] - n.t.data[e]) / r.y.size();
  r.gh.assign(kRows * kHidden, 0);
  r.gw2.assign(kOut * kHidden, 0);
  r.gw1.assign(kHidden * kIn, 0);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t k = 0; k < kHidden; ++k) {
      double s = 0;
      for (int64_t o = 0; o < kOut; ++o) {
        s += r.gy[i * kOut + o] * n.w2.data[o * kHidden + k];
        r.gw2[o * kHidden + k] += r.gy[i * kOut + o] * r.h[i * kHidden + k];
      }
      r.gh[i * kHidden + k] = r.h[i * kHidden + k] > 0 ? s : 0;
    }
  }
  r.gx.assign(kRows * kIn, 0);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t k = 0; k < kIn; ++k) {
      double s = 0;
      for (int64_t o = 0; o < kHidden; ++o) {
        s += r.gh[i * kHidden + o] * n.w1.data[o * kIn + k];
        r.gw1[o * kIn + k] += r.gh[i * kHidden + o] * n.x.data[i * kIn + k];
      }
      r.gx[i * kIn + k] = s;
    }
  }
  return r;
}

ForwardRequest Fwd(const Net& n, bool with_targets) {
  ForwardRequest f;
  f.mutable_key()->set_job_id("j");
  f.mutable_key()->set_segment("head");
  ToProto(n.x, "inputs", f.mutable_inputs());
  if (with_targets) ToProto(n.t, "targets", f.mutable_targets());
  f.set_train(true);
  f.set_return_outputs(true);
  return f;
}

std::map<std::string, HostTensor> Snapshot(DeviceExecutor& e) {
  ChunkAssembler a;
  auto chunks = e.Snapshot("j", 0);
  EXPECT_TRUE(chunks.ok());
  for (const auto& c : *chunks) EXPECT_TRUE(a.Add(c).ok());
  return *a.Finish();
}

TEST(DeviceExecutorTest, SystolicSegmentMatchesReferenceAndTrains) {
  DeviceExecutor::Options o;
  o.kind = DeviceKind::systolic;
  o.systolic.rows = o.systolic.cols = 8;
  auto e = *DeviceExecutor::Create(o);
  Net n;
  ASSERT_TRUE(e->Load(Header(true), Params(n)).ok());
  auto f = e->Forward(Fwd(n, true));
  ASSERT_TRUE(f.ok()) << f.status();
  const Reference r = Compute(n);
  auto y = *FromProto(f->outputs(), "y");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3, kOut}));
  for (size_t i = 0; i < r.y.size(); ++i) EXPECT_NEAR(y.data[i], r.y[i], 1e-5);
  double loss = 0;
  for (size_t i = 0; i < r.y.size(); ++i) loss += std::pow(r.y[i] - n.t.data[i], 2);
  EXPECT_NEAR(f->loss(), loss / r.y.size(), 1e-5);
  // Costs: the two GEMMs' MACs, as the systolic model counts them.
  EXPECT_EQ(f->cost().device_kind(), DeviceKind::systolic);
  EXPECT_DOUBLE_EQ(f->cost().counters().at("macs"), kRows * (kIn * kHidden + kHidden * kOut));
  const double cycles = SimulateGemm(o.systolic, {kRows, kHidden, kIn}).total_cycles +
                        SimulateGemm(o.systolic, {kRows, kOut, kHidden}).total_cycles;
  EXPECT_DOUBLE_EQ(f->cost().counters().at("cycles"), cycles);
  EXPECT_GT(f->cost().simulated_s(), 0);
  EXPECT_GT(f->cost().energy_j(), 0);

  BackwardRequest b;
  *b.mutable_key() = Fwd(n, true).key();
  auto g = e->Backward(b);
  ASSERT_TRUE(g.ok()) << g.status();
  auto gx = *FromProto(g->grad_input(), "gx");
  EXPECT_EQ(gx.shape, n.x.shape);
  for (size_t i = 0; i < r.gx.size(); ++i) EXPECT_NEAR(gx.data[i], r.gx[i], 1e-5);

  ApplyUpdateRequest u;
  u.set_job_id("j");
  u.set_step(0);
  u.set_learning_rate(0.01);
  ASSERT_TRUE(e->ApplyUpdate(u)->applied());
  EXPECT_FALSE(e->ApplyUpdate(u)->applied());  // a retry
  // Adam's first step moves each weight by lr * g / (|g| + eps).
  auto after = Snapshot(*e);
  for (size_t i = 0; i < r.gw2.size(); ++i) {
    const double expected = n.w2.data[i] - 0.01 * r.gw2[i] / (std::fabs(r.gw2[i]) + 1e-8);
    EXPECT_NEAR(after.at("w2").data[i], expected, 2e-5) << i;
  }
  for (size_t i = 0; i < r.gw1.size(); ++i) {
    if (std::fabs(r.gw1[i]) < 1e-4) continue;  // Adam's sign step is ill-defined at 0
    const double expected = n.w1.data[i] - 0.01 * r.gw1[i] / std::fabs(r.gw1[i]);
    EXPECT_NEAR(after.at("w1").data[i], expected, 2e-5) << i;
  }
}

TEST(DeviceExecutorTest, ALoadAfterARestartDoesNotSkipReplayedSteps) {
  // A coordinator that died never released the job here; its successor
  // loads the segment again from a checkpoint and replays steps the old
  // run had applied. Those must train, not be answered as retries.
  DeviceExecutor::Options o;
  o.kind = DeviceKind::systolic;
  o.systolic.rows = o.systolic.cols = 8;
  auto e = *DeviceExecutor::Create(o);
  Net n;
  auto run_step = [&](int64_t step) {
    ForwardRequest f = Fwd(n, true);
    f.mutable_key()->set_step(step);
    EXPECT_TRUE(e->Forward(f).ok());
    BackwardRequest b;
    *b.mutable_key() = f.key();
    auto g = e->Backward(b);
    EXPECT_TRUE(g.ok()) << g.status();
    ApplyUpdateRequest u;
    u.set_job_id("j");
    u.set_step(step);
    u.set_learning_rate(0.01);
    return e->ApplyUpdate(u)->applied();
  };
  ASSERT_TRUE(e->Load(Header(true), Params(n)).ok());
  EXPECT_TRUE(run_step(5));
  ASSERT_TRUE(e->Load(Header(true), Params(n)).ok());  // the successor's load
  EXPECT_TRUE(run_step(3));
  // The replayed step trained from the loaded weights, as the first run's
  // step did: the same weights after it.
  auto replayed = Snapshot(*e);
  ASSERT_TRUE(e->Load(Header(true), Params(n)).ok());
  EXPECT_TRUE(run_step(5));
  auto first = Snapshot(*e);
  for (const auto& [name, t] : first) {
    ASSERT_EQ(t.data.size(), replayed.at(name).data.size()) << name;
    for (size_t i = 0; i < t.data.size(); ++i) {
      EXPECT_FLOAT_EQ(t.data[i], replayed.at(name).data[i]) << name;
    }
  }
}

TEST(DeviceExecutorTest, ParametersBehindTheJobsOptimizerCountTheirOwnUpdates) {
  // Adapters added after the optimizer began (layerwise switching) load
  // with fewer updates than the job's: Adam's bias correction counts
  // theirs, so their first update is a first update.
  DeviceExecutor::Options o;
  o.kind = DeviceKind::systolic;
  o.systolic.rows = o.systolic.cols = 8;
  Net n;
  auto one_step = [&](const LoadParametersHeader& header) {
    auto e = *DeviceExecutor::Create(o);
    EXPECT_TRUE(e->Load(header, Params(n)).ok());
    ForwardRequest f = Fwd(n, true);
    f.mutable_key()->set_step(0);
    EXPECT_TRUE(e->Forward(f).ok());
    BackwardRequest b;
    *b.mutable_key() = f.key();
    EXPECT_TRUE(e->Backward(b).ok());
    ApplyUpdateRequest u;
    u.set_job_id("j");
    u.set_learning_rate(0.01);
    EXPECT_TRUE(e->ApplyUpdate(u).ok());
    return Snapshot(*e);
  };
  const auto fresh = one_step(Header(true));
  LoadParametersHeader behind = Header(true);
  behind.set_optimizer_steps(7);
  const auto uncorrected = one_step(behind);
  (*behind.mutable_optimizer_steps_by_prefix())["w"] = 0;
  (*behind.mutable_optimizer_steps_by_prefix())["b"] = 0;
  const auto corrected = one_step(behind);
  double apart = 0;
  for (const auto& [name, t] : fresh) {
    for (size_t i = 0; i < t.data.size(); ++i) {
      EXPECT_FLOAT_EQ(corrected.at(name).data[i], t.data[i]) << name;
      apart = std::max(apart, double(std::abs(uncorrected.at(name).data[i] - t.data[i])));
    }
  }
  EXPECT_GT(apart, 1e-4) << "the job's count alone gave the same update";
  // More updates than the job's is a bad request, named.
  (*behind.mutable_optimizer_steps_by_prefix())["w"] = 9;
  auto e = *DeviceExecutor::Create(o);
  const absl::Status bad = e->Load(behind, Params(n)).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("'w1' 9 updates"));
}

TEST(DeviceExecutorTest, ReramProgramsFrozenWeightsOnceAndReadsBothWays) {
  DeviceExecutor::Options o;
  o.kind = DeviceKind::reram;
  o.reram.adc_bits = 9;  // resolves every column sum: quantisation only
  auto e = *DeviceExecutor::Create(o);
  Net n;
  auto loaded = e->Load(Header(false), Params(n));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // 8-bit weights with an offset (NeuroSim's mapping) in 2-bit cells: 4.
  const double cells = 4.0 * (kIn * kHidden + kHidden * kOut);
  EXPECT_DOUBLE_EQ(loaded->cost().counters().at("cell_writes"), cells);
  EXPECT_DOUBLE_EQ(loaded->cost().counters().at("max_cell_writes"), 1);

  auto f = e->Forward(Fwd(n, true));
  ASSERT_TRUE(f.ok()) << f.status();
  const Reference r = Compute(n);
  auto y = *FromProto(f->outputs(), "y");
  double worst = 0;
  for (size_t i = 0; i < r.y.size(); ++i) worst = std::max(worst, std::fabs(y.data[i] - r.y[i]));
  // 8-bit weights and inputs through two layers: a few percent of the
  // output scale (about 1) at most.
  EXPECT_LT(worst, 0.05);
  EXPECT_GT(f->cost().counters().at("adc_conversions"), 0);
  EXPECT_EQ(f->cost().counters().count("cell_writes") ? f->cost().counters().at("cell_writes") : 0, 0);

  BackwardRequest b;
  *b.mutable_key() = Fwd(n, true).key();
  auto g = e->Backward(b);
  ASSERT_TRUE(g.ok()) << g.status();
  auto gx = *FromProto(g->grad_input(), "gx");
  double gx_scale = 0, gx_err = 0;
  for (size_t i = 0; i < r.gx.size(); ++i) {
    gx_scale = std::max(gx_scale, std::fabs(r.gx[i]));
    gx_err = std::max(gx_err, std::fabs(gx.data[i] - r.gx[i]));
  }
  EXPECT_LT(gx_err, 0.05 * gx_scale + 1e-6);

  ApplyUpdateRequest u;
  u.set_job_id("j");
  u.set_learning_rate(0.01);
  auto updated = e->ApplyUpdate(u);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ(updated->cost().counters().count("cell_writes"), 0u);  // frozen: no writes
  EXPECT_EQ(Snapshot(*e).at("w1").data, n.w1.data);
}

TEST(DeviceExecutorTest, TrainableReramPaysWritesOnEveryUpdate) {
  DeviceExecutor::Options o;
  o.kind = DeviceKind::reram;
  auto e = *DeviceExecutor::Create(o);
  Net n;
  ASSERT_TRUE(e->Load(Header(true), Params(n)).ok());
  ASSERT_TRUE(e->Forward(Fwd(n, true)).ok());
  BackwardRequest b;
  *b.mutable_key() = Fwd(n, true).key();
  ASSERT_TRUE(e->Backward(b).ok());
  ApplyUpdateRequest u;
  u.set_job_id("j");
  u.set_learning_rate(0.01);
  auto updated = e->ApplyUpdate(u);
  ASSERT_TRUE(updated.ok());
  EXPECT_DOUBLE_EQ(updated->cost().counters().at("cell_writes"),
                   4.0 * (kIn * kHidden + kHidden * kOut));
  EXPECT_DOUBLE_EQ(updated->cost().counters().at("max_cell_writes"), 2);
}

TEST(DeviceExecutorTest, BadInputsAreNamed) {
  auto e = *DeviceExecutor::Create({});
  Net n;
  auto missing = e->Load(Header(true), {{"w1", n.w1}});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("parameter 'b1' must be sent"));
  ASSERT_TRUE(e->Load(Header(true), Params(n)).ok());
  ForwardRequest f = Fwd(n, false);
  ToProto(HostTensor({4, kIn + 1}), "inputs", f.mutable_inputs());
  auto bad = e->Forward(f);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("'input' has shape [4, 11] but 'w1' takes 10 inputs"));
  EXPECT_EQ(e->JoinGroup(JoinGroupRequest()).code(), absl::StatusCode::kUnimplemented);
  DeviceExecutor::Options gpu;
  gpu.kind = DeviceKind::gpu;
  EXPECT_FALSE(DeviceExecutor::Create(gpu).ok());
}

}  // namespace
}  // namespace hpt
