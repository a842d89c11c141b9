#include "coordinator/training/checkpoint.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace hpt {
namespace {

std::string TempDir() {
  std::string tmpl = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                     "/ckptXXXXXX";
  return mkdtemp(tmpl.data());
}

Checkpoint Make(int64_t step) {
  Checkpoint c;
  c.header.set_job_id("job-000007");
  c.header.set_step(step);
  c.header.set_phase(step > 20 ? TrainingPhase::lora : TrainingPhase::full);
  c.header.set_cause(CheckpointCause::periodic);
  c.header.set_reason(CheckpointReason(CheckpointCause::periodic, 10));
  c.header.mutable_progress()->set_epoch(2);
  c.header.mutable_progress()->set_loss(0.25 + step);
  c.header.add_epoch_losses(1.5);
  HostTensor w;
  w.shape = {3, 2};
  w.data = {1, 2, 3, 4, 5, float(step)};
  c.tensors["model/layers.0.w"] = w;
  HostTensor m;
  m.shape = {3, 2};
  m.data.assign(6, 0.5f);
  c.tensors["model/layers.0.w@exp_avg"] = m;
  // Larger than one 4 MiB chunk: it travels as several records.
  HostTensor big;
  big.shape = {1 << 21};
  big.data.assign(size_t(1) << 21, 0.0f);
  big.data[123456] = 7.0f;
  c.tensors["trial/big"] = big;
  return c;
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  if (d) closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointTest, WritesKeepsNewestAndReadsBack) {
  const std::string dir = CheckpointDir(TempDir(), "job-000007");
  for (int64_t step : {10, 20, 30, 40, 50}) {
    absl::StatusOr<CheckpointInfo> info = WriteCheckpoint(dir, Make(step), /*keep=*/3);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->step(), step);
    EXPECT_GT(info->bytes(), 8 << 20);
  }
  // Three files, no temporaries.
  EXPECT_EQ(Files(dir), (std::vector<std::string>{"step-000000000030.ckpt",
                                                  "step-000000000040.ckpt",
                                                  "step-000000000050.ckpt"}));
  std::vector<CheckpointInfo> list = ListCheckpoints(dir);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].step(), 30);
  EXPECT_EQ(list[2].step(), 50);
  EXPECT_EQ(list[2].phase(), TrainingPhase::lora);
  EXPECT_EQ(list[2].epoch(), 2);
  EXPECT_DOUBLE_EQ(list[2].loss(), 50.25);
  EXPECT_EQ(list[2].cause(), CheckpointCause::periodic);
  EXPECT_EQ(list[2].reason(), "every 10 steps");

  absl::StatusOr<Checkpoint> latest = ReadCheckpoint(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->header.step(), 50);
  EXPECT_EQ(latest->header.job_id(), "job-000007");
  ASSERT_EQ(latest->tensors.size(), 3u);
  EXPECT_EQ(latest->tensors.at("model/layers.0.w").data,
            (std::vector<float>{1, 2, 3, 4, 5, 50}));
  EXPECT_EQ(latest->tensors.at("model/layers.0.w").shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(latest->tensors.at("trial/big").data[123456], 7.0f);
  EXPECT_EQ(latest->tensors.at("model/layers.0.w@exp_avg").data[5], 0.5f);

  RemoveCheckpoints(CheckpointDir(TempDir(), "nothing-here"));  // a no-op
  absl::StatusOr<Checkpoint> older = ReadCheckpoint(dir, 40);
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->tensors.at("model/layers.0.w").data[5], 40.0f);
  EXPECT_EQ(ReadCheckpoint(dir, 10).status().code(), absl::StatusCode::kNotFound);
  RemoveCheckpoints(dir);
  EXPECT_TRUE(ListCheckpoints(dir).empty());
  EXPECT_EQ(opendir(dir.c_str()), nullptr);  // the folder went too
}

TEST(CheckpointTest, NoneIsNotFound) {
  const std::string dir = CheckpointDir(TempDir(), "job-000001");
  EXPECT_TRUE(ListCheckpoints(dir).empty());
  absl::Status s = ReadCheckpoint(dir).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no checkpoint"), std::string::npos);
}

TEST(CheckpointTest, DamagedFilesAreDataLossAndSkippedInListings) {
  const std::string dir = CheckpointDir(TempDir(), "job-000002");
  ASSERT_TRUE(WriteCheckpoint(dir, Make(10), 3).ok());
  ASSERT_TRUE(WriteCheckpoint(dir, Make(20), 3).ok());
  // Cut the newest short: its tensors end early.
  const std::string newest = dir + "/step-000000000020.ckpt";
  {
    std::ifstream in(newest, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(newest, std::ios::binary | std::ios::trunc);
    out.write(data.data(), std::streamsize(data.size() / 2));
  }
  absl::Status s = ReadCheckpoint(dir, 20).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("step-000000000020.ckpt"), std::string::npos);
  // Not a checkpoint at all.
  std::ofstream(dir + "/step-000000000030.ckpt") << "hello";
  EXPECT_EQ(ReadCheckpoint(dir, 30).status().code(), absl::StatusCode::kDataLoss);
  // The header of the cut file still reads; the other is skipped.
  std::vector<CheckpointInfo> list = ListCheckpoints(dir);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].step(), 10);
  EXPECT_EQ(list[1].step(), 20);
  EXPECT_TRUE(ReadCheckpoint(dir, 10).ok());
}

TEST(CheckpointTest, AnOlderCheckpointsCauseComesFromItsReason) {
  const std::string dir = CheckpointDir(TempDir(), "job-000007");
  const std::pair<int64_t, const char*> written[] = {
      {10, "phase switch"}, {20, "every 10 steps"}, {30, "something else"}};
  for (const auto& [step, reason] : written) {
    Checkpoint c = Make(step);
    c.header.clear_cause();
    c.header.set_reason(reason);
    ASSERT_TRUE(WriteCheckpoint(dir, c, /*keep=*/3).ok());
  }
  const std::vector<CheckpointInfo> list = ListCheckpoints(dir);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].cause(), CheckpointCause::phase_switch);
  EXPECT_EQ(list[1].cause(), CheckpointCause::periodic);
  EXPECT_EQ(list[2].cause(), CheckpointCause::CHECKPOINT_CAUSE_UNSPECIFIED);
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(dir, 10);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->header.cause(), CheckpointCause::phase_switch);
  EXPECT_EQ(read->header.reason(), "phase switch");
}

TEST(CheckpointTest, EveryCauseHasItsOwnWords) {
  std::set<std::string> seen;
  for (int i = CheckpointCause::Name_MIN; i <= CheckpointCause::Name_MAX; ++i) {
    if (!CheckpointCause::Name_IsValid(i)) continue;
    const auto cause = static_cast<CheckpointCause::Name>(i);
    const std::string words = CheckpointReason(cause, 25);
    if (cause == CheckpointCause::CHECKPOINT_CAUSE_UNSPECIFIED) {
      EXPECT_EQ(words, "");
    } else {
      EXPECT_NE(words, "") << CheckpointCause::Name_Name(cause);
      EXPECT_TRUE(seen.insert(words).second) << words;
    }
  }
  EXPECT_EQ(CheckpointReason(CheckpointCause::periodic, 25), "every 25 steps");
  EXPECT_EQ(CheckpointReason(CheckpointCause::phase_switch, 25), "phase switch");
}

}  // namespace
}  // namespace hpt
