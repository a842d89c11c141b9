// What the GPU run tests share: a small synthetic data set, a job's load
// header (with or without resident samples), and the same steps sent as
// task calls or as one run, with their parameters read back.
#ifndef HPT_WORKERS_GPU_RUN_TESTING_H_
#define HPT_WORKERS_GPU_RUN_TESTING_H_

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/tensor_codec.h"
#include "common/worker_tasks.h"
#include "data/synthetic.h"
#include "data/window_dataset.h"
#include "gtest/gtest.h"
#include "models/model_config.h"
#include "workers/gpu/gpu_executor.h"

namespace hpt::gpu_run_testing {

inline constexpr int64_t kWindow = 8;

// Synthetic series of `stations` columns, grouped `group` tokens a sample
// (0: all).
inline WindowDataset Data(int64_t stations, int64_t group = 0) {
  SyntheticOptions so;
  so.stations = stations;
  so.time_steps = 160;
  WindowOptions wo;
  wo.input_steps = kWindow;
  wo.train = {0, 160};
  wo.token_group = group;
  wo.group_stride = group > 0 ? 2 : 1;
  return *WindowDataset::Create(MakeSyntheticSeries(so), wo);
}

inline LoadParametersHeader Header(const std::string& job, const WindowDataset& data, bool samples,
                            const std::string& precision = "fp32", double dropout = 0.1) {
  LoadParametersHeader h;
  h.set_job_id(job);
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(kWindow);
  c.set_output_features(1);
  c.set_dropout(dropout);  // on by default: the masks must follow the step
  *h.mutable_model() = c;
  h.mutable_optimizer()->set_type(ADAM);
  h.mutable_optimizer()->set_learning_rate(1e-2);
  h.set_init_seed(7);
  h.set_num_tokens(int32_t(data.num_tokens()));
  Precision::Name p = Precision::PRECISION_UNSPECIFIED;
  EXPECT_TRUE(Precision::Name_Parse(precision, &p)) << precision;
  h.set_precision(p);
  if (samples) {
    SampleSource* s = h.mutable_samples();
    const TimeSeriesMatrix& series = data.normalized_series();
    s->set_rows(series.rows);
    s->set_columns(series.columns);
    s->set_input_steps(data.options().input_steps);
    s->set_horizon(data.options().horizon);
    s->set_tokens(data.num_tokens());
    s->set_groups(data.num_groups());
    s->set_group_stride(data.options().group_stride);
  }
  return h;
}

inline std::map<std::string, HostTensor> Series(const WindowDataset& data) {
  const TimeSeriesMatrix& series = data.normalized_series();
  HostTensor t({series.rows, series.columns});
  t.data = series.values;
  return {{kSamplesTensor, t}};
}

// Step j's batch: `batch` indices into train_starts, spread over the set.
inline std::vector<int64_t> Batch(int64_t j, int64_t batch) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < batch; ++i) idx.push_back((j * 37 + i * 11) % 100);
  return idx;
}

// The same steps as task calls: the host gathers each batch and sends it.
inline std::vector<double> TaskSteps(GpuExecutor& e, const std::string& job, const WindowDataset& data,
                              int64_t first, int64_t steps, int64_t batch, int part = 0,
                              int parts = 1) {
  std::vector<double> losses;
  for (int64_t j = 0; j < steps; ++j) {
    std::vector<int64_t> all = Batch(first + j, batch), mine;
    for (int64_t i = part; i < batch; i += parts) mine.push_back(all[i]);
    HostTensor x, y;
    data.Gather(data.train_starts(), mine, &x, &y);
    ForwardRequest f;
    f.mutable_key()->set_job_id(job);
    f.mutable_key()->set_step(first + j);
    f.mutable_key()->set_segment("model");
    ToProto(x, "inputs", f.mutable_inputs());
    ToProto(y, "targets", f.mutable_targets());
    f.set_train(true);
    absl::StatusOr<ForwardResponse> forward = e.Forward(f);
    EXPECT_TRUE(forward.ok()) << forward.status();
    losses.push_back(forward.ok() ? forward->loss() : 0);
    BackwardRequest b;
    *b.mutable_key() = f.key();
    b.set_global_batch_size(batch);
    EXPECT_TRUE(e.Backward(b).ok());
    ApplyUpdateRequest u;
    u.set_job_id(job);
    u.set_step(first + j);
    u.set_learning_rate(1e-2 / double(1 + first + j));
    EXPECT_TRUE(e.ApplyUpdate(u).ok());
  }
  return losses;
}

inline TrainRunRequest RunOf(const std::string& job, const WindowDataset& data, int64_t first,
                    int64_t steps, int64_t batch, int part = 0, int parts = 1) {
  TrainRunRequest r;
  r.set_job_id(job);
  r.set_first_step(first);
  for (int64_t j = 0; j < steps; ++j) {
    RunStep* step = r.add_steps();
    std::vector<int64_t> all = Batch(first + j, batch);
    for (int64_t i = part; i < batch; i += parts) {
      step->add_samples(data.train_starts()[all[i]]);
    }
    step->set_global_batch_size(batch);
    step->set_learning_rate(1e-2 / double(1 + first + j));
  }
  return r;
}

// Rank `rank` of `world` joining `job`'s data-parallel group through the
// rendezvous store on loopback `port`, its keys under `prefix`.
inline JoinGroupRequest JoinOf(const std::string& job, int rank, int world, int port,
                               const std::string& prefix) {
  JoinGroupRequest j;
  j.set_job_id(job);
  j.set_rank(rank);
  j.set_world_size(world);
  j.set_store_host("127.0.0.1");
  j.set_store_port(port);
  j.set_store_prefix(prefix);
  return j;
}

inline std::map<std::string, HostTensor> Params(GpuExecutor& e, const std::string& job) {
  auto chunks = e.Snapshot(job, 0, {}, /*optimizer_state=*/true);
  EXPECT_TRUE(chunks.ok()) << chunks.status();
  return *AssembleChunks(*chunks);
}

inline void ExpectSameParameters(const std::map<std::string, HostTensor>& a,
                          const std::map<std::string, HostTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(t.data, b.at(name).data) << name;
  }
}

// Every value of `a` within `relative` of the largest of `b`'s tensor,
// parameters and Adam's moments alike, except the attention's key bias:
// its gradient is zero but for rounding (softmax ignores a shift that
// every key of a query shares), and Adam scales that noise up to steps of
// the rate's size, so two orders of one sum part there.
inline void ExpectClose(const std::map<std::string, HostTensor>& a,
                 const std::map<std::string, HostTensor>& b, double relative) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    if (name.find("k_proj.bias") != std::string::npos) continue;
    const auto& u = b.at(name).data;
    ASSERT_EQ(t.data.size(), u.size()) << name;
    double worst = 0, scale = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      worst = std::max(worst, double(std::abs(t.data[i] - u[i])));
      scale = std::max(scale, double(std::abs(u[i])));
    }
    EXPECT_LE(worst, relative * scale + 1e-9) << name;
  }
}

// A run of `steps` steps from `first` under `launch: graph`.
inline TrainRunRequest GraphRunOf(const std::string& job, const WindowDataset& data,
                                  int64_t first, int64_t steps, int64_t batch) {
  TrainRunRequest r = RunOf(job, data, first, steps, batch);
  r.set_launch(Launch::graph);
  return r;
}

}  // namespace hpt::gpu_run_testing

#endif  // HPT_WORKERS_GPU_RUN_TESTING_H_
