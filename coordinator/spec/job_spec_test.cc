#include "coordinator/spec/job_spec.h"

#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

TEST(JobSpecTest, DefaultsFillAnEmptySpec) {
  auto spec = NormalizeJobSpec(JobSpec());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().preset(), "tiny");
  EXPECT_EQ(spec->training().epochs(), 3);
  EXPECT_EQ(spec->training().batch_size(), 16);
  EXPECT_EQ(spec->training().optimizer().type(), ADAM);
  EXPECT_DOUBLE_EQ(spec->training().optimizer().learning_rate(), 1e-3);
  EXPECT_TRUE(spec->data().has_synthetic());
  EXPECT_EQ(spec->data().synthetic().stations(), 16);
  EXPECT_EQ(spec->data().input_steps(), 12);
  EXPECT_EQ(spec->placement().gpu_workers(), 1);
  EXPECT_EQ(spec->name(), "tiny");
}

TEST(JobSpecTest, SwitchRulesGetTheirDefaults) {
  JobSpec spec;
  // The default pair, from the switch frontier (docs/method.md).
  auto chosen = NormalizeJobSpec(spec);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->hpt().switch_rule(), SwitchRule::paper);
  EXPECT_EQ(chosen->hpt().trial_test(), TrialTest::difference);
  EXPECT_DOUBLE_EQ(chosen->hpt().plateau_z(), 0);  // another rule's setting stays unset
  EXPECT_EQ(chosen->hpt().fallback_placement(), FallbackPlacement::gpu);
  // A named rule keeps the paper's trial.
  spec.mutable_hpt()->set_switch_rule(SwitchRule::paper);
  auto paper = NormalizeJobSpec(spec);
  ASSERT_TRUE(paper.ok()) << paper.status();
  EXPECT_EQ(paper->hpt().trial_test(), TrialTest::difference);
  spec.mutable_hpt()->set_switch_rule(SwitchRule::trend);
  auto trend = NormalizeJobSpec(spec);
  ASSERT_TRUE(trend.ok()) << trend.status();
  EXPECT_EQ(trend->hpt().trend_windows(), 5);
  EXPECT_DOUBLE_EQ(trend->hpt().trend_gain(), 0.01);
  spec.mutable_hpt()->set_switch_rule(SwitchRule::plateau);
  auto plateau = NormalizeJobSpec(spec);
  ASSERT_TRUE(plateau.ok()) << plateau.status();
  EXPECT_DOUBLE_EQ(plateau->hpt().plateau_z(), 1.645);
  EXPECT_EQ(plateau->hpt().trend_windows(), 0);  // another rule's setting stays unset
  EXPECT_EQ(plateau->hpt().trial_test(), TrialTest::difference);
  EXPECT_DOUBLE_EQ(plateau->hpt().trial_margin(), 0);
  spec.mutable_hpt()->set_trial_test(TrialTest::margin);
  auto margin = NormalizeJobSpec(spec);
  ASSERT_TRUE(margin.ok()) << margin.status();
  EXPECT_DOUBLE_EQ(margin->hpt().trial_margin(), 0.05);
  EXPECT_EQ(RuleName(margin->hpt()), "plateau+margin");
  HptSpec named;
  ASSERT_TRUE(SetRuleName("trend+none", named).ok());
  EXPECT_EQ(named.switch_rule(), SwitchRule::trend);
  EXPECT_EQ(named.trial_test(), TrialTest::none);
  ASSERT_TRUE(SetRuleName("paper", named).ok());
  EXPECT_EQ(named.trial_test(), TrialTest::TRIAL_TEST_UNSPECIFIED);
  // A name that is no rule or no test is refused with the names allowed.
  EXPECT_EQ(SetRuleName("knee", named).message(),
            "hpt.switch_rule 'knee' is not paper, consecutive, trend, plateau or layerwise");
  EXPECT_EQ(SetRuleName("plateau+maybe", named).message(),
            "hpt.trial_test 'maybe' is not difference, margin or none");
  EXPECT_EQ(RuleName(named), "paper");
  // Layer by layer: no trial, and each layer's own rank unless one is named.
  spec = JobSpec();
  spec.mutable_hpt()->set_switch_rule(SwitchRule::layerwise);
  auto layerwise = NormalizeJobSpec(spec);
  ASSERT_TRUE(layerwise.ok()) << layerwise.status();
  EXPECT_EQ(layerwise->hpt().trial_test(), TrialTest::none);
  EXPECT_TRUE(layerwise->hpt().lora().auto_rank());
  EXPECT_EQ(RuleName(layerwise->hpt()), "layerwise");
  spec.mutable_hpt()->mutable_lora()->set_rank(4);
  auto one_rank = NormalizeJobSpec(spec);
  ASSERT_TRUE(one_rank.ok()) << one_rank.status();
  EXPECT_FALSE(one_rank->hpt().lora().auto_rank());
  EXPECT_EQ(one_rank->hpt().lora().rank(), 4);
}

TEST(JobSpecTest, AFieldNameFromBeforeARenameIsRefusedWhereItStands) {
  auto old = ParseJobSpecText("data { input_steps: 24 }\nhpt { window: 480 }");
  ASSERT_FALSE(old.ok());
  EXPECT_THAT(old.status().message(), HasSubstr("job spec line 2 column"));
  EXPECT_THAT(old.status().message(), HasSubstr("window"));
}

TEST(JobSpecTest, TextParseErrorNamesLineAndColumn) {
  auto spec = ParseJobSpecText("name: \"a\"\ntraining { epochs: \"three\" }\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("job spec line 2 column 20: Expected integer"));
}

TEST(JobSpecTest, UnknownFieldIsNamedWithWhatItLikelyMeant) {
  auto spec = ParseJobSpecText("training { epoch: 3 }");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              ::testing::StartsWith("job spec line 1 column 12: TrainingSpec has no field 'epoch' "
                                    "(did you mean 'epochs'?); its fields: epochs, batch_size, "));
  // A field of the whole spec inside another message: most likely a
  // missing '}'.
  auto brace = ParseJobSpecText("model { preset: \"wind\"\ndata { input_steps: 12 }");
  ASSERT_FALSE(brace.ok());
  EXPECT_THAT(std::string(brace.status().message()),
              ::testing::StartsWith("job spec line 2 column 1: ModelSpec has no field 'data' (it "
                                    "is a field of the whole spec: is a '}' missing before it?)"));
}

struct BadSpec {
  const char* text;
  const char* message;
};

class JobSpecValidationTest : public ::testing::TestWithParam<BadSpec> {};

// Refused when parsed (an enum's name: "job spec line L column C: ...")
// or when normalised.
TEST_P(JobSpecValidationTest, RejectsWithFieldName) {
  auto parsed = ParseJobSpecText(GetParam().text);
  const absl::Status status = parsed.ok() ? NormalizeJobSpec(*parsed).status() : parsed.status();
  ASSERT_FALSE(status.ok()) << GetParam().text;
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, JobSpecValidationTest,
    ::testing::Values(
        BadSpec{"training { batch_size: -4 }", "training.batch_size must be in 1..65536, got -4"},
        BadSpec{"training { epochs: -1 }", "training.epochs must be in 1..100000, got -1"},
        BadSpec{"training { epochs: 1000000000 }",
                "training.epochs must be in 1..100000, got 1000000000"},
        BadSpec{"training { optimizer { beta1: nan } }",
                "training.optimizer.beta1 must be in [0, 1), got nan"},
        BadSpec{"training { optimizer { beta2: 1 } }",
                "training.optimizer.beta2 must be in [0, 1), got 1"},
        BadSpec{"training { optimizer { eps: -1 } }",
                "training.optimizer.eps must be a number >= 0 (0: 1e-8), got -1"},
        BadSpec{"training { optimizer { weight_decay: inf } }",
                "training.optimizer.weight_decay must be a number >= 0, got inf"},
        BadSpec{"model { num_layers: 1000000 }",
                "model.num_layers must be at most 256, got 1000000"},
        BadSpec{"model { d_model: 100000 }", "model.d_model must be at most 8192, got 100000"},
        BadSpec{"training { optimizer { learning_rate: -0.1 } }",
                "training.optimizer.learning_rate must be a positive number, got -0.1"},
        BadSpec{"training { step_lr_gamma: 1.5 }",
                "training.step_lr_gamma must be in (0, 1], got 1.5"},
        BadSpec{"model { preset: \"giant\" }",
                "model.preset 'giant' is unknown; choose one of tiny, swe, "
                "weather, covid, wind"},
        BadSpec{"data { csv { } }", "data.csv.path is empty"},
        BadSpec{"data { input_steps: -2 }", "data.input_steps must be positive, got -2"},
        BadSpec{"placement { gpu_workers: 4 } training { batch_size: 2 }",
                "training.batch_size (2) must be at least placement.gpu_workers (4)"},
        BadSpec{"hpt { mode: lora }", "job spec line 1 column 18: mode 'lora' is not hpt or full"},
        BadSpec{"hpt { mode: \"full\" }",
                "job spec line 1 column 13: mode takes a name without quotes: hpt or full"},
        BadSpec{"hpt { mode: 7 }", "hpt.mode 7 is not hpt or full"},
        BadSpec{"training { precision: fp16 }",
                "job spec line 1 column 28: precision 'fp16' is not fp32 or bf16"},
        BadSpec{"training { precision: 9 }", "training.precision 9 is not fp32 or bf16"},
        BadSpec{"hpt { placement: tpu }",
                "job spec line 1 column 22: placement 'tpu' is not paper, gpu or reram_full"},
        BadSpec{"hpt { placement: 8 }", "hpt.placement 8 is not paper, gpu or reram_full"},
        BadSpec{"hpt { alpha: 2 }", "hpt.alpha must be in (0, 1), got 2"},
        BadSpec{"hpt { switch_rule: knee }",
                "job spec line 1 column 25: switch_rule 'knee' is not paper, consecutive, trend, "
                "plateau or layerwise"},
        BadSpec{"hpt {\n  switch_rule: \"plateau\"\n}",
                "job spec line 2 column 16: switch_rule takes a name without quotes: paper, "
                "consecutive, trend, plateau or layerwise"},
        BadSpec{"hpt { fallback_placement: retry }",
                "job spec line 1 column 33: fallback_placement 'retry' is not gpu or fail"},
        BadSpec{"hpt { fallback_placement: 3 }", "hpt.fallback_placement 3 is not gpu or fail"},
        BadSpec{"hpt { switch_rule: 9 }",
                "hpt.switch_rule 9 is not paper, consecutive, trend, plateau or layerwise"},
        BadSpec{"hpt { switch_rule: layerwise trial_test: margin }",
                "hpt.trial_test margin cannot go with switch_rule layerwise, which runs no "
                "trial: leave trial_test unset or none"},
        BadSpec{"hpt { lora { layers: 1 } }",
                "hpt.lora.layers is the trainer's own (the layers switch_rule layerwise has "
                "switched): leave it empty"},
        BadSpec{"hpt { switch_rule: trend trend_windows: 2 }",
                "hpt.trend_windows must be in 3..1000 (a line through fewer has no error), got 2"},
        BadSpec{"hpt { trend_gain: 1.5 }",
                "hpt.trend_gain must be a fraction of the loss in (0, 1), got 1.5"},
        BadSpec{"hpt { plateau_z: -1 }",
                "hpt.plateau_z must be in (0, 100] standard errors, got -1"},
        BadSpec{"hpt { plateau_z: nan }",
                "hpt.plateau_z must be in (0, 100] standard errors, got nan"},
        BadSpec{"hpt { trend_gain: nan }",
                "hpt.trend_gain must be a fraction of the loss in (0, 1), got nan"},
        BadSpec{"hpt { trial_test: equivalence }",
                "job spec line 1 column 31: trial_test 'equivalence' is not difference, margin "
                "or none"},
        BadSpec{"hpt { trial_test: margin trial_margin: 1 }",
                "hpt.trial_margin must be a fraction of the loss in (0, 1), got 1"},
        BadSpec{"hpt { trial_margin: inf }",
                "hpt.trial_margin must be a fraction of the loss in (0, 1), got inf"},
        BadSpec{"hpt { weight_layer: 5 }", "hpt.weight_layer must be in [0, 2), got 5"},
        BadSpec{"hpt { lora { targets: \"ff1\" } }",
                "hpt.lora.targets entry 'ff1' is not q_proj, k_proj, v_proj or o_proj"},
        BadSpec{"placement { head_device: tpu }",
                "job spec line 1 column 30: head_device 'tpu' is not gpu, reram or systolic"},
        BadSpec{"placement { head_device: 7 }",
                "placement.head_device 7 is not gpu, reram or systolic"},
        BadSpec{"hpt { mode: hpt } placement { head_device: reram }",
                "hpt.mode hpt moves the whole model at the switch; "
                "placement.head_device 'reram' needs hpt.mode full"},
        BadSpec{"data { weather { } }", "data.weather.dir is empty"},
        // Enum numbers no name stands for, ranks wider than the layers, and
        // numbers that are not finite are refused by field.
        BadSpec{"training { optimizer { type: 7 } }",
                "training.optimizer.type 7 is not ADAM or ADAMW"},
        BadSpec{"data { csv { path: \"x.csv\" header: 9 } }",
                "data.csv.header 9 is not AUTO, PRESENT or ABSENT"},
        BadSpec{"hpt { lora { rank: 4096 } }",
                "hpt.lora.rank 4096 is above the layers' width (d_model 32)"},
        BadSpec{"hpt { interconnect { latency_us: nan } }",
                "hpt.interconnect.latency_us must be a number in [0, 1e+09], got nan"},
        BadSpec{"hpt { interconnect { energy_pj_per_byte: inf } }",
                "hpt.interconnect.energy_pj_per_byte must be a number in [0, 1e+09], got inf"},
        BadSpec{"hpt { loss_threshold: inf }",
                "hpt.loss_threshold must be a number in [0, 1e+09], got inf"}));

TEST(JobSpecTest, LongNamesAndModelsNoWorkerCanHoldAreRefused) {
  JobSpec named;
  named.set_name(std::string(300, 'x'));
  auto long_name = NormalizeJobSpec(named);
  ASSERT_FALSE(long_name.ok());
  EXPECT_EQ(long_name.status().message(), "name is 300 bytes; at most 256");
  // 256 layers of d_model 8192: each layer ~805 M parameters, 16 bytes each.
  ModelSpec huge;
  huge.set_preset("wind");
  huge.set_d_model(8192);
  huge.set_num_layers(256);
  auto model = ResolveModelConfig(huge, 12, 1);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("GiB of fp32 weights, gradients and Adam"));
  // The paper's size is fine.
  ModelSpec paper;
  paper.set_preset("wind");
  EXPECT_TRUE(ResolveModelConfig(paper, 12, 1).ok());
}

TEST(JobSpecTest, WeightTestTracksThePapersLayerPerPresetUnlessSet) {
  // The paper's code tracks layer 11 of 12 for swe and weather, layer 0 for
  // covid and wind.
  for (const auto& [preset, layers, want] :
       std::vector<std::tuple<std::string, int, int>>{
           {"weather", 12, 11}, {"weather", 2, 1}, {"swe", 3, 2}, {"covid", 12, 0}, {"wind", 2, 0}}) {
    JobSpec in;
    in.mutable_model()->set_preset(preset);
    in.mutable_model()->set_num_layers(layers);
    auto out = NormalizeJobSpec(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->hpt().weight_layer(), want) << preset << " with " << layers << " layers";
  }
  JobSpec set;
  set.mutable_model()->set_preset("weather");
  set.mutable_model()->set_num_layers(2);
  set.mutable_hpt()->set_weight_layer(0);  // explicitly layer 0: kept
  set.mutable_hpt()->set_weight_layer_set(true);
  EXPECT_EQ(NormalizeJobSpec(set)->hpt().weight_layer(), 0);
}

TEST(JobSpecTest, WindowsCountSamplesAndSpanWholeSteps) {
  JobSpec in;
  in.mutable_model()->set_preset("wind");
  in.mutable_training()->set_batch_size(32);
  auto paper = NormalizeJobSpec(in);
  ASSERT_TRUE(paper.ok()) << paper.status();
  EXPECT_EQ(paper->hpt().check_window_samples(), 480);        // the paper's k, in samples
  EXPECT_EQ(paper->hpt().check_window_steps(), 15);   // ceil(480 / 32)
  in.mutable_hpt()->set_check_window_samples(100);
  EXPECT_EQ(NormalizeJobSpec(in)->hpt().check_window_steps(), 4);  // ceil(100 / 32)
  in.mutable_hpt()->set_check_window_samples(0);
  in.mutable_hpt()->set_check_window_steps(5);
  auto steps = NormalizeJobSpec(in);
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_EQ(steps->hpt().check_window_samples(), 160);
  EXPECT_EQ(NormalizeJobSpec(*steps)->hpt().check_window_steps(), 5);  // idempotent
  in.mutable_hpt()->set_check_window_samples(2'000'000'000);
  EXPECT_THAT(std::string(NormalizeJobSpec(in).status().message()),
              ::testing::HasSubstr("hpt.check_window_samples must be in 1..1000000000, got 2000000000"));
  in.mutable_hpt()->set_check_window_samples(100);
  auto both = NormalizeJobSpec(in);
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(both.status().message()), ::testing::HasSubstr("hpt.check_window_steps"));
}

// A window under 3 steps leaves the trial's t-test too few losses: it is
// rounded up, and the spec says so (hptctl submit prints it). A full job
// never checks, so it hears nothing.
TEST(JobSpecTest, AWindowUnderThreeStepsIsRoundedUpWithANote) {
  JobSpec in;
  in.mutable_model()->set_preset("tiny");
  in.mutable_data()->mutable_synthetic();  // a source given: no data note
  in.mutable_training()->set_batch_size(16);
  in.mutable_hpt()->set_check_window_samples(10);
  auto spec = NormalizeJobSpec(in);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->hpt().check_window_steps(), 3);
  EXPECT_EQ(spec->hpt().check_window_samples(), 48);
  ASSERT_EQ(spec->notes_size(), 1);
  EXPECT_EQ(spec->notes(0),
            "hpt.check_window: 10 samples = 1 step at batch 16 rounded up to 3 steps (48 "
            "samples): a trial lasts one window, and its t-test needs at least 3 losses a side");
  auto again = NormalizeJobSpec(*spec);  // idempotent: no second note
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->notes_size(), 1);
  EXPECT_EQ(again->hpt().check_window_steps(), 3);
  in.mutable_hpt()->set_mode(TrainingMode::full);
  EXPECT_EQ(NormalizeJobSpec(in)->notes_size(), 0);
  // No data source at all: the synthetic series, said.
  in.clear_data();
  auto synthetic = NormalizeJobSpec(in);
  ASSERT_EQ(synthetic->notes_size(), 1);
  EXPECT_THAT(synthetic->notes(0), ::testing::HasSubstr(
                                       "data: no source given, so the job trains on a synthetic "
                                       "series (16 stations x 512 steps)"));
}

// A data set the paper trains without a preset trains the small default
// model, and the note names the paper's model for that data.
TEST(JobSpecTest, APaperDataSetWithoutAPresetNamesThePapersModel) {
  for (auto [source, preset] : std::initializer_list<std::pair<const char*, const char*>>{
           {"data { covid { path: \"c.csv\" } }", "covid"},
           {"data { weather { dir: \"w\" } }", "weather"},
           {"data { swe { stations_csv: \"s.csv\" } }", "swe"}}) {
    auto spec = NormalizeJobSpec(*ParseJobSpecText(absl::StrCat(source, " hpt { mode: full }")));
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->model().preset(), "tiny");
    EXPECT_THAT(spec->notes(), ::testing::ElementsAre(absl::StrCat(
                                   "model.preset: none given, so the small 'tiny' model trains; "
                                   "--preset=",
                                   preset, " (model { preset: \"", preset, "\" }) is the paper's ",
                                   preset, " model with its training recipe")));
    EXPECT_EQ(NormalizeJobSpec(*spec)->notes_size(), 1);  // said once
  }
  // A preset given, or a CSV (no paper preset to name): nothing said.
  EXPECT_EQ(NormalizeJobSpec(
                *ParseJobSpecText("model { preset: \"tiny\" } data { covid { path: \"c.csv\" } } "
                                  "hpt { mode: full }"))
                ->notes_size(),
            0);
  EXPECT_EQ(
      NormalizeJobSpec(*ParseJobSpecText("data { csv { path: \"x.csv\" } } hpt { mode: full }"))
          ->notes_size(),
      0);
}

// A full-parameter job has no LoRA phase: settings of that phase given in
// the submission are said to have no effect; defaults filled in, or an HpT
// job's settings, are not.
TEST(JobSpecTest, LoraPhaseSettingsOfAFullJobAreSaidToHaveNoEffect) {
  auto note = [](const std::string& text) {
    absl::StatusOr<JobSpec> given = ParseJobSpecText(text);
    EXPECT_TRUE(given.ok()) << given.status();
    absl::StatusOr<JobSpec> normal = NormalizeJobSpec(*given);
    EXPECT_TRUE(normal.ok()) << normal.status();
    return IgnoredLoraPhaseNote(given->hpt(), normal->hpt());
  };
  EXPECT_EQ(note("hpt { mode: full placement: gpu lora { rank: 4 } }"),
            "hpt.placement, hpt.lora.rank: hpt.mode full trains every parameter to the end, "
            "with no LoRA phase, so these have no effect");
  EXPECT_EQ(note("hpt { mode: full lora_optimizer { learning_rate: 0.01 } }"),
            "hpt.lora_optimizer.learning_rate: hpt.mode full trains every parameter to the end, "
            "with no LoRA phase, so it has no effect");
  EXPECT_EQ(note("hpt { mode: full switch_rule: plateau }").substr(0, 17), "hpt.switch_rule: ");
  EXPECT_EQ(note("hpt { placement: gpu lora { rank: 4 } }"), "");
  EXPECT_EQ(note("hpt { mode: full }"), "");
  EXPECT_EQ(note("model { preset: \"weather\" } hpt { mode: full }"), "");  // its recipe fills them
}

TEST(JobSpecTest, HptDefaultsAreThePapers) {
  for (auto [preset, window] : std::initializer_list<std::pair<const char*, int64_t>>{
           {"swe", 365}, {"covid", 720}, {"wind", 480}, {"weather", 8000},
           {"tiny", 48}}) {  // tiny: 10 samples at batch 16, rounded up to 3 steps
    JobSpec in;
    in.mutable_model()->set_preset(preset);
    auto spec = NormalizeJobSpec(in);
    ASSERT_TRUE(spec.ok()) << spec.status();
    const HptSpec& h = spec->hpt();
    EXPECT_EQ(h.check_window_samples(), window) << preset;
    EXPECT_EQ(h.mode(), TrainingMode::hpt);
    EXPECT_EQ(h.placement(), Placement::paper);
    EXPECT_DOUBLE_EQ(h.loss_threshold(), 0.1);
    EXPECT_DOUBLE_EQ(h.weight_threshold(), 0.01);
    EXPECT_DOUBLE_EQ(h.alpha(), 0.01);
    EXPECT_EQ(h.lora().rank(), 8);
    EXPECT_DOUBLE_EQ(h.lora().alpha(), 64);
    EXPECT_DOUBLE_EQ(h.lora().dropout(), 0.1);
    EXPECT_THAT(h.lora().targets(), ::testing::ElementsAre("q_proj", "v_proj"));
  }
  JobSpec head;
  head.mutable_placement()->set_head_device(DeviceKind::systolic);
  EXPECT_EQ(NormalizeJobSpec(head)->hpt().mode(), TrainingMode::full);  // a head split trains full
}

TEST(JobSpecTest, ModelOverridesApply) {
  ModelSpec m;
  m.set_preset("wind");
  m.set_num_layers(2);
  m.set_d_model(64);
  m.set_dropout(0.0);
  m.set_dropout_set(true);
  auto c = ResolveModelConfig(m, 12, 1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_layers(), 2);
  EXPECT_EQ(c->d_model(), 64);
  EXPECT_EQ(c->reduction_dim(), 32);
  EXPECT_EQ(c->num_heads(), 8);
  EXPECT_EQ(c->dropout(), 0.0);
  EXPECT_TRUE(c->embedding_skip());  // the wind preset's
  m.set_embedding_skip(EmbeddingSkip::off);
  EXPECT_FALSE(ResolveModelConfig(m, 12, 1)->embedding_skip());
  ModelSpec tiny;
  tiny.set_preset("tiny");
  EXPECT_FALSE(ResolveModelConfig(tiny, 12, 1)->embedding_skip());
  tiny.set_embedding_skip(EmbeddingSkip::on);
  EXPECT_TRUE(ResolveModelConfig(tiny, 12, 1)->embedding_skip());
  auto text = ParseJobSpecText("model { preset: \"weather\" embedding_skip: off }");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_FALSE(ResolveModelConfig(text->model(), 12, 1)->embedding_skip());
  m.set_num_heads(5);
  EXPECT_EQ(ResolveModelConfig(m, 12, 1).status().message(),
            "model.d_model (64) must be divisible by model.num_heads (5)");
}

TEST(JobSpecTest, LaunchReadsByNameDefaultsToEagerAndRefusesOtherValues) {
  auto graph = ParseJobSpecText("training { launch: graph }");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(NormalizeJobSpec(*graph)->training().launch(), Launch::graph);
  EXPECT_EQ(NormalizeJobSpec(JobSpec())->training().launch(), Launch::eager);
  EXPECT_FALSE(ParseJobSpecText("training { launch: cuda_graph }").ok());
  JobSpec odd;
  odd.mutable_training()->set_launch(Launch::Mode(7));
  absl::StatusOr<JobSpec> refused = NormalizeJobSpec(odd);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("training.launch"), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("eager or graph"), std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace hpt
