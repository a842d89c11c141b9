// hpt_devsim: what-if costs of one GEMM (M x K input, K x N weights) on a
// simulated systolic array, ReRAM crossbars (one layer, or on a chip with
// --tiles), or one kernel on a reference GPU.
//
//   hpt_devsim --device=systolic --systolic_rows=128 --systolic_cols=128
//       --systolic_dataflow=ws --m=928 --n=512 --k=512
//       [--systolic_dram_bw_words_per_cycle=16] [--format=json]
//   hpt_devsim --device=reram --m=928 --n=512 --k=512 [--tiles=1008]
//       [--reram_adc_bits=6]
//   hpt_devsim --device=gpu --gpu=v100 --m=928 --n=512 --k=512
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/device_kind.h"
#include "devices/device_flags.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/reram/reram_chip.h"
#include "devices/reram/reram_layer.h"
#include "devices/systolic/systolic_array.h"

ABSL_FLAG(std::string, device, "systolic", "systolic, reram or gpu.");
// gpu
ABSL_FLAG(std::string, gpu, "v100",
          "gpu: reference GPU preset (v100, a100, h100, ...: a name it does not know lists them).");
ABSL_FLAG(std::string, precision, "fp32", "gpu: fp32, tf32 or bf16.");
ABSL_FLAG(int64_t, m, 0, "Input rows (M).");
ABSL_FLAG(int64_t, n, 0, "Weight columns (N).");
ABSL_FLAG(int64_t, k, 0, "Reduction dimension (K).");
ABSL_FLAG(std::string, format, "table", "table or json.");
// The device flags (--systolic_*, --reram_*): devices/device_flags.h,
// the same as hpt_worker's.
ABSL_FLAG(int64_t, tiles, 0,
          "reram: tiles of the chip (16 subarrays each); free ones hold copies "
          "of the layer. 0: the layer alone, no duplication.");

namespace {

int Fail(const std::string& message) {
  std::cerr << "hpt_devsim: " << message << std::endl;
  return 2;
}

void Print(bool json, const std::vector<std::pair<std::string, std::string>>& rows) {
  if (json) {
    std::cout << "{";
    for (size_t i = 0; i < rows.size(); ++i) {
      std::cout << (i ? ", " : "") << "\"" << rows[i].first << "\": " << rows[i].second;
    }
    std::cout << "}" << std::endl;
    return;
  }
  for (const auto& [key, value] : rows) {
    std::cout << absl::StrFormat("%-22s %s\n", key, value);
  }
}

std::string Num(double v) { return absl::StrFormat("%.6g", v); }
std::string Int(int64_t v) { return absl::StrCat(v); }

// One GEMM on the systolic array the --systolic_* flags describe.
int RunSystolic(int64_t m, int64_t n, int64_t k, bool json) {

  absl::StatusOr<hpt::SystolicConfig> c = hpt::SystolicConfigFromFlags();
  if (!c.ok()) return Fail(std::string(c.status().message()));
  const hpt::SystolicReport r = hpt::SimulateGemm(*c, {m, n, k});
  Print(json, {{"total_cycles", Int(r.total_cycles)},
               {"compute_cycles", Int(r.compute_cycles)},
               {"stall_cycles", Int(r.stall_cycles)},
               {"overall_util_pct", Num(r.overall_util_pct)},
               {"mapping_eff_pct", Num(r.mapping_eff_pct)},
               {"compute_util_pct", Num(r.compute_util_pct)},
               {"sram_ifmap_reads", Int(r.sram_ifmap_reads)},
               {"sram_filter_reads", Int(r.sram_filter_reads)},
               {"sram_ofmap_writes", Int(r.sram_ofmap_writes)},
               {"dram_ifmap_reads", Int(r.dram_ifmap_reads)},
               {"dram_filter_reads", Int(r.dram_filter_reads)},
               {"dram_ofmap_writes", Int(r.dram_ofmap_writes)},
               {"macs", Int(r.macs)},
               {"latency_s", Num(r.latency_s)},
               {"energy_j", Num(r.energy_j)}});
  return 0;

}

// One layer of M input vectors on the ReRAM crossbars of the --reram_*
// flags (a chip of --tiles tiles, when set).
int RunReram(int64_t m, int64_t n, int64_t k, bool json) {

  absl::StatusOr<hpt::ReramConfig> config = hpt::ReramConfigFromFlags();
  if (!config.ok()) return Fail(std::string(config.status().message()));
  const hpt::ReramConfig& c = *config;
  auto layer = hpt::ReramLayer::Create(c, k, n);
  if (!layer.ok()) return Fail(std::string(layer.status().message()));
  const int64_t chip_tiles = absl::GetFlag(FLAGS_tiles);
  if (chip_tiles < 0) return Fail(absl::StrCat("--tiles must not be negative, got ", chip_tiles));
  if (chip_tiles > 0) {
    hpt::ReramChipConfig chip;
    chip.tiles = chip_tiles;
    auto copies = hpt::PlanDuplication(c, chip, {{"layer", k, n, m}});
    if (!copies.ok()) return Fail(std::string(copies.status().message()));
    if (absl::Status s = layer->SetDuplication(copies->front()); !s.ok()) {
      return Fail(std::string(s.message()));
    }
  }
  // NeuroSim's energy depends on the data; draw it as the reference runs
  // do (devices/reram/reram_cost_test.cc): weights uniform over the
  // symmetric 8-bit levels of [-1, 1), inputs uniform over the unsigned
  // 8-bit range.
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> weight_level(-128, 127), input_level(0, 255);
  std::vector<float> w(k * n), x(m * k), y(m * n);
  for (float& v : w) v = static_cast<float>(weight_level(rng)) / 128.0f;
  for (float& v : x) v = static_cast<float>(input_level(rng));
  auto program = layer->Program(w.data());
  if (!program.ok()) return Fail(std::string(program.status().message()));
  auto read = layer->Forward(x.data(), m, y.data());
  if (!read.ok()) return Fail(std::string(read.status().message()));
  const hpt::ReramReadCost cost =
      hpt::ReramLayerReadCost(c, m, k, n, layer->duplication());
  const hpt::ReramFloorplan& f = layer->floorplan();
  Print(json, {{"latency_s", Num(read->latency_s)},
               {"energy_j", Num(read->energy_j)},
               {"duplication", Int(layer->duplication())},
               {"in_tile_copies", Int(f.in_tile_copies)},
               {"tile_size", Int(f.tile_size)},
               {"tiles", Int(f.tiles() * layer->duplication())},
               {"subarrays", Int(f.subarrays * layer->duplication())},
               {"cycles", Num(cost.cycles)},
               {"array_adc_s", Num(cost.array_adc_s)},
               {"accumulation_s", Num(cost.accumulation_s)},
               {"buffer_s", Num(cost.buffer_s)},
               {"interconnect_s", Num(cost.interconnect_s)},
               {"periphery_s", Num(cost.periphery_s)},
               {"adc_energy_j", Num(read->adc_energy_j)},
               {"accumulation_energy_j", Num(read->accumulation_energy_j)},
               {"buffer_energy_j", Num(read->buffer_energy_j)},
               {"interconnect_energy_j", Num(read->interconnect_energy_j)},
               {"periphery_energy_j", Num(read->periphery_energy_j)},
               {"adc_conversions", Int(read->adc_conversions)},
               {"program_cell_writes", Int(program->cell_writes)},
               {"program_latency_s", Num(program->latency_s)},
               {"program_energy_j", Num(program->energy_j)}});
  return 0;

}

// One GEMM kernel on the reference GPU.
int RunGpu(int64_t m, int64_t n, int64_t k, bool json) {

  auto gpu = hpt::GpuPreset(absl::GetFlag(FLAGS_gpu));
  if (!gpu.ok()) return Fail("--gpu: " + std::string(gpu.status().message()));
  const std::string p = absl::GetFlag(FLAGS_precision);
  hpt::GpuPrecision precision = hpt::GpuPrecision::kFp32;
  int64_t word = 4;
  if (p == "tf32") {
    precision = hpt::GpuPrecision::kTf32;
  } else if (p == "bf16") {
    precision = hpt::GpuPrecision::kBf16;
    word = 2;
  } else if (p != "fp32") {
    return Fail("--precision must be fp32, tf32 or bf16, got '" + p + "'");
  }
  // One GEMM kernel: reads both operands and writes the result once.
  const hpt::GpuKernel gemm{"aten::mm", 2.0 * double(m) * double(n) * double(k),
                            double(word) * double(m * k + k * n + m * n)};
  const hpt::GpuStepCost c = hpt::CostKernels(*gpu, precision, {gemm});
  Print(json, {{"latency_s", Num(c.time_s)},
               {"energy_j", Num(c.energy_j)},
               {"kernels", Int(c.kernels)},
               {"launch_bound", c.launch_bound_kernels > 0 ? "true" : "false"},
               {"flops", Num(c.flops)},
               {"bytes", Num(c.bytes)}});
  return 0;

}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "hpt_devsim --device=systolic|reram --m=M --n=N --k=K [device flags]");
  // SCALE-Sim counts SRAM sizes in 1-byte words: this tool compares with
  // it, so that is its default (the worker's is the operands' size).
  absl::SetFlag(&FLAGS_systolic_word_bytes, 1);
  absl::ParseCommandLine(argc, argv);
  const int64_t m = absl::GetFlag(FLAGS_m), n = absl::GetFlag(FLAGS_n),
                k = absl::GetFlag(FLAGS_k);
  if (m < 1 || n < 1 || k < 1) {
    return Fail(absl::StrFormat("--m, --n and --k must be positive, got %d, %d, %d",
                                m, n, k));
  }
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "table" && format != "json") {
    return Fail("--format must be table or json, got '" + format + "'");
  }
  const bool json = format == "json";
  absl::StatusOr<hpt::DeviceKind::Name> device =
      hpt::ParseDeviceKind("--device", absl::GetFlag(FLAGS_device));
  if (!device.ok()) return Fail(std::string(device.status().message()));
  switch (*device) {
    case hpt::DeviceKind::systolic:
      return RunSystolic(m, n, k, json);
    case hpt::DeviceKind::reram:
      return RunReram(m, n, k, json);
    default:
      return RunGpu(m, n, k, json);
  }
}
