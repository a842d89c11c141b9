#include "hptctl/cost_views.h"

#include <string>
#include <tuple>

#include "common/device_kind.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// A record of a small HpT job: 10 full-phase GPU steps, a switch, 30
// LoRA-phase steps on a ReRAM worker and a systolic worker.
WorkRecord SmallRecord() {
  WorkRecord r;
  r.set_steps_per_epoch(40);
  r.set_project_epochs(1);
  r.set_switch_step(10);
  (*r.mutable_settings())["gpu_baseline"] = "paper";
  (*r.mutable_settings())["reram_chip_tiles"] = "1008";
  for (DeviceKind::Name kind : kDeviceKinds) {
    RecordedDevice* dev = r.add_devices();
    dev->set_worker("w" + KindName(kind));
    dev->set_kind(kind);
  }
  StepShape* full = r.add_shapes();
  full->set_phase(CostPhase::full);
  full->set_data_parallel_ranks(1);
  full->set_count(10);
  for (const char* type : {"forward", "backward", "update"}) {
    RecordedTask* t = full->add_main();
    t->set_device(0);
    t->set_type(type);
    GpuKernelWork* k = t->mutable_work()->add_kernels();
    k->set_op("aten::mm");
    k->set_flops(4e9);
    k->set_bytes(1e7);
    k->set_count(40);
  }
  StepShape* lora = r.add_shapes();
  lora->set_phase(CostPhase::lora);
  lora->set_data_parallel_ranks(1);
  lora->set_count(30);
  lora->add_run_first(10);
  lora->add_run_last(39);
  RecordedTask* read = lora->add_main();
  read->set_device(1);
  read->set_type("forward");
  read->set_resource("wreram/seg0");
  ReramReadWork* rw = read->mutable_work()->add_items()->mutable_reram_read();
  rw->set_layer("l.weight");
  rw->set_k(256);
  rw->set_n(256);
  rw->set_vectors(64);
  rw->set_duplication(1);
  RecordedTask* gemm = lora->add_main();
  gemm->set_device(2);
  gemm->set_type("forward");
  gemm->set_bytes_in(64 * 256 * 4);
  SystolicGemmWork* g = gemm->mutable_work()->add_items()->mutable_gemm();
  g->set_m(64);
  g->set_n(256);
  g->set_k(256);
  g->set_times(200);
  RecordedChip* chip = r.add_chips();
  chip->set_worker("wreram");
  RecordedChip::Layer* l = chip->add_layers();
  l->set_name("l.weight");
  l->set_k(256);
  l->set_n(256);
  l->set_vectors(128);
  return r;
}

TEST(CostViews, SweepRunsTheProductFirstKeySlowest) {
  auto a = ParseGrid("systolic_rows=16,64");
  auto b = ParseGrid("systolic_clock_hz=5e8,1e9,2e9");
  ASSERT_TRUE(a.ok() && b.ok());
  auto points = Sweep(SmallRecord(), {*a, *b}, {});
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 6u);
  EXPECT_EQ((*points)[0].settings[0].second, "16");
  EXPECT_EQ((*points)[2].settings[1].second, "2e9");
  EXPECT_EQ((*points)[3].settings[0].second, "64");
  // A faster array helps HpT, never GPU-only.
  EXPECT_LT((*points)[0].projected_time_ratio, (*points)[2].projected_time_ratio);
  EXPECT_EQ((*points)[0].gpu_only_s, (*points)[2].gpu_only_s);
  EXPECT_EQ((*points)[0].bound_by, "systolic");
  const std::string csv = SweepCsv({*a, *b}, *points);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "systolic_rows,systolic_clock_hz,time_ratio,energy_ratio,projected_time_ratio,"
            "projected_energy_ratio,hpt_s,hpt_j,gpu_only_s,gpu_only_j,lora_step_s,bound_by");
  const std::string svg = SweepSvg({*a, *b}, *points, "t");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  // The second key's three values: a solid and a dashed line each.
  size_t paths = 0;
  for (size_t at = svg.find("<path"); at != std::string::npos; at = svg.find("<path", at + 1)) {
    ++paths;
  }
  EXPECT_EQ(paths, 6u);
}

// A grid value costed as something other than what is shown (a profile
// file's text, shown by its path); a profile with no board power gives
// energy ratios of 0, which the table shows as not known.
TEST(CostViews, CostedValuesAreCostedAndShownByTheirNames) {
  SweepGrid grid = *ParseGrid("reference_gpu=mine.profile,h100");
  grid.costed = {"name = mine; fp32_flops = 1e12; memory_bw = 1e11", "h100"};
  auto points = Sweep(SmallRecord(), {grid}, {});
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 2u);
  EXPECT_EQ((*points)[0].settings[0].second, "mine.profile");
  // A 1 TFLOP/s GPU is slower than an H100, so HpT saves more against it.
  EXPECT_GT((*points)[0].gpu_only_s, (*points)[1].gpu_only_s);
  EXPECT_EQ((*points)[0].energy_ratio, 0);
  EXPECT_GT((*points)[1].energy_ratio, 0);
  const std::string table = SweepTable({grid}, *points);
  const std::string first = table.substr(table.find('\n') + 1);
  EXPECT_EQ(first.rfind("mine.profile ", 0), 0u) << table;
  EXPECT_NE(first.substr(0, first.find('\n')).find(" - "), std::string::npos) << table;
}

// A grid whose values move no time ratio is said, once (a ReRAM or
// systolic setting with the device that bounds the LoRA step instead); one
// that moves them is not.
TEST(CostViews, ASettingThatMovesNothingIsSaid) {
  const SweepGrid tiles = *ParseGrid("reram_chip_tiles=256,1008");
  const SweepGrid gpu = *ParseGrid("reference_gpu=v100,h100");
  std::vector<SweepPoint> points;
  for (const char* t : {"256", "1008"}) {
    for (auto [g, ratio] : {std::pair{"v100", 3.7}, {"h100", 2.9}}) {
      SweepPoint p;
      p.settings = {{"reram_chip_tiles", t}, {"reference_gpu", g}};
      p.time_ratio = ratio;
      p.projected_time_ratio = ratio;
      p.energy_ratio = std::string(t) == "256" ? 4.1 : 4.0;  // energy may move: still said
      p.bound_by = "systolic";
      points.push_back(p);
    }
  }
  const std::string table = SweepTable({tiles, gpu}, points);
  EXPECT_NE(table.find("\nnote: no value of reram_chip_tiles moves the time ratios of this job "
                       "(each LoRA step here is bound by systolic)\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("no value of reference_gpu"), std::string::npos) << table;
  EXPECT_EQ(SweepSvg({tiles, gpu}, points, "t").find("coincide"), std::string::npos)
      << "the reference_gpu lines differ";
  // A GPU setting that moves nothing: said, without the LoRA step's bound.
  for (SweepPoint& p : points) p.time_ratio = p.projected_time_ratio = 3.7;
  const std::string flat = SweepTable({tiles, gpu}, points);
  EXPECT_NE(flat.find("\nnote: no value of reference_gpu moves the time ratios of this job\n"),
            std::string::npos)
      << flat;
  // In the SVG the two reference_gpu lines lie on each other: said.
  const std::string svg = SweepSvg({tiles, gpu}, points, "t");
  EXPECT_NE(svg.find(">the lines of each reference_gpu coincide: its values move neither "
                     "ratio</text>"),
            std::string::npos)
      << svg;
}

// whatif's comparison: each ratio as run beside its re-costed value; an
// energy ratio not known shows as a dash; a job without costs gives none.
TEST(CostViews, WhatIfShowsEachRatioAsRunAndReCosted) {
  Job as_run, what_if;
  for (auto [job, time, energy] : {std::tuple{&as_run, 1.28, 1.34}, {&what_if, 2.5, 0.0}}) {
    CostComparison& c = *job->mutable_hpt()->mutable_comparison();
    c.set_hpt_time_s(3.16);
    c.set_baseline(GpuBaseline::paper);
    c.set_time_ratio(time);
    c.set_energy_ratio(energy);
    c.set_projected_time_ratio(time * 4);
    c.set_projected_energy_ratio(energy * 10);
  }
  EXPECT_EQ(WhatIfChange(as_run, what_if, true),
            "HpT vs GPU-only (paper baseline)      as run    what if\n"
            "  time                                1.28x       2.5x\n"
            "  energy                              1.34x          -\n"
            "  projected time                      5.12x        10x\n"
            "  projected energy                    13.4x          -\n");
  EXPECT_EQ(WhatIfChange(Job(), what_if, true), "");
  // A time ratio that did not move on a launch-bound GPU side: said why.
  what_if.mutable_hpt()->mutable_comparison()->set_time_ratio(1.28);
  DeviceCost& gpu = *what_if.add_device_costs();
  gpu.set_kind(DeviceKind::gpu);
  gpu.mutable_cost()->set_simulated_s(2.0);
  (*gpu.mutable_cost()->mutable_counters())["launch_bound_s"] = 1.4;
  EXPECT_NE(WhatIfChange(as_run, what_if, true)
                .find("\n  time unmoved: 70 % of the GPU's simulated time waits on the host "
                      "(launching kernels, calling ops), not on the GPU's work, which a faster "
                      "GPU does not shorten\n"),
            std::string::npos)
      << WhatIfChange(as_run, what_if, true);
  // Settings that left the GPU as it was, under half launch-bound, or a
  // time that moved: no such line.
  EXPECT_EQ(WhatIfChange(as_run, what_if, false).find("unmoved"), std::string::npos);
  (*gpu.mutable_cost()->mutable_counters())["launch_bound_s"] = 0.6;
  EXPECT_EQ(WhatIfChange(as_run, what_if, true).find("unmoved"), std::string::npos);
  (*gpu.mutable_cost()->mutable_counters())["launch_bound_s"] = 1.4;
  what_if.mutable_hpt()->mutable_comparison()->set_time_ratio(1.5);
  EXPECT_EQ(WhatIfChange(as_run, what_if, true).find("unmoved"), std::string::npos);
}

TEST(CostViews, BadGridsAndTargetsNameTheProblem) {
  EXPECT_FALSE(ParseGrid("systolic_rows").ok());
  EXPECT_FALSE(ParseGrid("systolic_rows=").ok());
  EXPECT_FALSE(ParseTarget("speed=3").ok());
  EXPECT_FALSE(ParseTarget("time=-1").ok());
  auto t = ParseTarget("energy=12.05");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->first, "energy");
  auto grid = ParseGrid("systolic_dataflow=os,ws");
  auto r = FindTarget(SmallRecord(), *grid, "time", 2, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not numeric"), std::string::npos);
  auto unknown = Sweep(SmallRecord(), {*ParseGrid("systolic_rowz=1")}, {});
  EXPECT_NE(unknown.status().message().find("systolic_rowz"), std::string::npos);
}

TEST(CostViews, TargetIsFoundOrExplained) {
  const WorkRecord record = SmallRecord();
  auto grid = ParseGrid("systolic_clock_hz=1e8,1e10");
  auto ends = Sweep(record, {*grid}, {});
  ASSERT_TRUE(ends.ok());
  const double low = (*ends)[0].projected_time_ratio, high = (*ends)[1].projected_time_ratio;
  ASSERT_LT(low, high);
  auto found = FindTarget(record, *grid, "time", (low + high) / 2, {});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->reached) << found->message;
  EXPECT_GT(found->value, 1e8);
  EXPECT_LT(found->value, 1e10);
  EXPECT_NEAR(found->ratio, (low + high) / 2, 1e-6 * high);
  auto missed = FindTarget(record, *grid, "time", high * 10, {});
  ASSERT_TRUE(missed.ok());
  EXPECT_FALSE(missed->reached);
  EXPECT_NE(missed->message.find("bounds it"), std::string::npos) << missed->message;
  auto already = FindTarget(record, *grid, "time", low / 2, {});
  ASSERT_TRUE(already.ok());
  EXPECT_TRUE(already->reached);
  EXPECT_EQ(already->value, 1e8);
  EXPECT_NE(already->message.find("every systolic_clock_hz in"), std::string::npos)
      << already->message;
}

TEST(CostViews, ChromeTraceSlicesNestOnTheirTracks) {
  const WorkRecord record = SmallRecord();
  auto costing = RecordCosting::Create(&record, {});
  ASSERT_TRUE(costing.ok());
  auto timeline = (*costing)->Timeline(12);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  EXPECT_EQ(timeline->phase, CostPhase::lora);
  ASSERT_EQ(timeline->tasks.size(), 2u);
  // The product waits for the read and its input's transfer.
  EXPECT_GE(timeline->tasks[1].start_s, timeline->tasks[0].finish_s);
  EXPECT_GT(timeline->tasks[1].transfer_s, 0);
  const std::string json = ChromeTrace("job-1", *timeline);
  EXPECT_NE(json.find("\"ph\": \"X\""), std::string::npos);
  EXPECT_NE(json.find("\"thread_name\""), std::string::npos);
  EXPECT_EQ((*costing)->Timeline(99).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hpt
