#include "devices/device_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "devices/cost_settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// Each test starts from the defaults and leaves them as it found them.
class DeviceFlagsTest : public ::testing::Test {
 protected:
  absl::FlagSaver saver_;
};

// A flag's default is its device config's: the flags untouched describe
// DefaultDeviceCostConfig, setting for setting.
TEST_F(DeviceFlagsTest, DefaultFlagsAreTheDefaultDevices) {
  absl::StatusOr<SystolicConfig> systolic = SystolicConfigFromFlags();
  ASSERT_TRUE(systolic.ok()) << systolic.status();
  absl::StatusOr<ReramConfig> reram = ReramConfigFromFlags();
  ASSERT_TRUE(reram.ok()) << reram.status();
  DeviceCostConfig from_flags = DefaultDeviceCostConfig(DeviceKind::reram);
  from_flags.systolic = *systolic;
  from_flags.reram = *reram;
  EXPECT_EQ(DeviceSettingsOf(from_flags),
            DeviceSettingsOf(DefaultDeviceCostConfig(DeviceKind::reram)));
  EXPECT_EQ(reram->seed, ReramConfig().seed);
  EXPECT_EQ(reram->endurance_writes, ReramConfig().endurance_writes);
  EXPECT_EQ(reram->numerics, ReramConfig().numerics);
}

// Every setting of a device node is a flag of the same name, and back:
// one declaration makes both.
TEST_F(DeviceFlagsTest, EverySimulatedDeviceSettingIsAFlag) {
  int device_settings = 0;
  for (const CostSettingInfo& s : DeviceCostSettings()) {
    if (s.key == "reference_gpu" || s.key == "gpu_precision") continue;  // the GPU worker's own
    ++device_settings;
    EXPECT_NE(absl::FindCommandLineFlag(s.key), nullptr) << s.key;
  }
  EXPECT_EQ(device_settings, 25);
}

// A flag is read by its setting's parser: the same range, the error
// naming the flag.
TEST_F(DeviceFlagsTest, ABadFlagIsRefusedNamingItAndTheRange) {
  absl::SetFlag(&FLAGS_systolic_rows, 0);
  absl::StatusOr<SystolicConfig> systolic = SystolicConfigFromFlags();
  ASSERT_FALSE(systolic.ok());
  EXPECT_EQ(systolic.status().message(), "--systolic_rows='0': want a whole number in 1..65536");

  absl::SetFlag(&FLAGS_systolic_rows, 128);
  absl::SetFlag(&FLAGS_systolic_dataflow, "xs");
  EXPECT_EQ(SystolicConfigFromFlags().status().message(),
            "--systolic_dataflow='xs': dataflow 'xs' is not os, ws or is");

  absl::SetFlag(&FLAGS_systolic_dataflow, "ws");
  absl::SetFlag(&FLAGS_reram_weight_bits, 1);
  EXPECT_EQ(ReramConfigFromFlags().status().message(),
            "--reram_weight_bits='1': want a whole number in 2..16");

  DeviceCostConfig c = DefaultDeviceCostConfig(DeviceKind::reram);
  EXPECT_EQ(ApplyDeviceSetting("reram_weight_bits", "1", &c).message(),
            "setting reram_weight_bits='1': want a whole number in 2..16");
  // Each named setting lists its names, from the one table that also
  // writes them back.
  EXPECT_EQ(ApplyDeviceSetting("reram_sign_mode", "twos", &c).message(),
            "setting reram_sign_mode='twos': want differential or offset");
  EXPECT_EQ(ApplyDeviceSetting("reram_numerics", "slow", &c).message(),
            "setting reram_numerics='slow': want fast or exact");
  DeviceCostConfig gpu = DefaultDeviceCostConfig(DeviceKind::gpu);
  EXPECT_EQ(ApplyDeviceSetting("gpu_precision", "fp16", &gpu).message(),
            "setting gpu_precision='fp16': want fp32, tf32 or bf16");
  // An unknown key says which it likely meant before listing every key.
  EXPECT_THAT(std::string(ApplyDeviceSetting("reram.adc_bits", "6", &c).message()),
              ::testing::StartsWith("unknown setting 'reram.adc_bits' (did you mean "
                                    "'reram_adc_bits'?); known: reference_gpu, "));
  ASSERT_TRUE(ApplyDeviceSetting("reram_sign_mode", "offset", &c).ok());
  EXPECT_EQ(DeviceSettingsOf(c).at("reram_sign_mode"), "offset");
  ASSERT_TRUE(ApplyDeviceSetting("gpu_precision", "tf32", &gpu).ok());
  EXPECT_EQ(DeviceSettingsOf(gpu).at("gpu_precision"), "tf32");
}

// --systolic_sram_kb sizes all three SRAMs; a per-operand flag of 0 keeps
// that size, any other replaces it.
TEST_F(DeviceFlagsTest, PerOperandSramsFollowTheSharedSize) {
  absl::SetFlag(&FLAGS_systolic_sram_kb, 64);
  absl::SetFlag(&FLAGS_systolic_filter_sram_kb, 16);
  absl::StatusOr<SystolicConfig> systolic = SystolicConfigFromFlags();
  ASSERT_TRUE(systolic.ok()) << systolic.status();
  EXPECT_EQ(systolic->ifmap_sram_kb, 64);
  EXPECT_EQ(systolic->filter_sram_kb, 16);
  EXPECT_EQ(systolic->ofmap_sram_kb, 64);
}

// Flags set the fields the settings name, ReRAM's enums included.
TEST_F(DeviceFlagsTest, FlagsReachTheirFields) {
  absl::SetFlag(&FLAGS_reram_sign_mode, "differential");
  absl::SetFlag(&FLAGS_reram_numerics, "exact");
  absl::SetFlag(&FLAGS_reram_seed, 7);
  absl::SetFlag(&FLAGS_reram_read_noise, 0.02);
  absl::SetFlag(&FLAGS_reram_clock_hz, 2.5e8);
  absl::StatusOr<ReramConfig> reram = ReramConfigFromFlags();
  ASSERT_TRUE(reram.ok()) << reram.status();
  EXPECT_EQ(reram->sign_mode, SignMode::kDifferential);
  EXPECT_EQ(reram->numerics, ReramNumerics::kBitExact);
  EXPECT_EQ(reram->seed, 7u);
  EXPECT_EQ(reram->read_noise_sigma, 0.02);
  EXPECT_EQ(reram->clock_hz, 2.5e8);
}

}  // namespace
}  // namespace hpt
