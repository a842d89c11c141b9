#include "devices/cost_settings.h"

#include <cmath>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace hpt {
namespace {

absl::Status Bad(const std::string& key, const std::string& value, const std::string& want) {
  return absl::InvalidArgumentError(
      absl::StrCat("setting ", key, "='", value, "': ", want));
}

// Parses into `out`; INVALID_ARGUMENT naming `key` otherwise.
absl::Status ParseInt(const std::string& key, const std::string& value, int64_t lo, int64_t hi,
                      int64_t* out) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < lo || v > hi) {
    return Bad(key, value, absl::StrCat("want a whole number in ", lo, "..", hi));
  }
  *out = v;
  return absl::OkStatus();
}
absl::Status ParseDouble(const std::string& key, const std::string& value, double lo, double hi,
                         double* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < lo || v > hi) {
    return Bad(key, value, absl::StrCat("want a number in ", lo, "..", hi));
  }
  *out = v;
  return absl::OkStatus();
}
absl::Status ParseBool(const std::string& key, const std::string& value, bool* out) {
  if (!absl::SimpleAtob(value, out)) return Bad(key, value, "want true or false");
  return absl::OkStatus();
}

std::string PrecisionName(GpuPrecision p) {
  switch (p) {
    case GpuPrecision::kTf32: return "tf32";
    case GpuPrecision::kBf16: return "bf16";
    default: return "fp32";
  }
}

using Setter = std::function<absl::Status(const std::string&, const std::string&,
                                          DeviceCostConfig*)>;
struct DeviceSetting {
  CostSettingInfo info;
  std::string kind;  // the worker kinds it applies to: "gpu", "device" (both nodes), "reram"
  Setter set;
};

// An integer field of the systolic or ReRAM config.
template <typename Field>
Setter IntField(int64_t lo, int64_t hi, Field field) {
  return [=](const std::string& key, const std::string& value, DeviceCostConfig* c) {
    int64_t v = 0;
    if (absl::Status s = ParseInt(key, value, lo, hi, &v); !s.ok()) return s;
    field(c, v);
    return absl::OkStatus();
  };
}
template <typename Field>
Setter DoubleField(double lo, double hi, Field field) {
  return [=](const std::string& key, const std::string& value, DeviceCostConfig* c) {
    double v = 0;
    if (absl::Status s = ParseDouble(key, value, lo, hi, &v); !s.ok()) return s;
    field(c, v);
    return absl::OkStatus();
  };
}

// Long because it is a table: one entry per device setting, each with its
// help, its numerics flag and how it reads and writes a config.
const std::vector<DeviceSetting>& DeviceSettingTable() {
  static const auto* table = new std::vector<DeviceSetting>{
      {{"reference_gpu",
        "GPU profile the GPU workers are costed as: v100, a100, h100, or a profile file "
        "(hpt_calibrate)",
        false, false},
       "gpu",
       [](const std::string& key, const std::string& value, DeviceCostConfig* c) {
         absl::StatusOr<GpuSpec> gpu = GpuProfileOrPreset(value);
         if (!gpu.ok()) return Bad(key, value, std::string(gpu.status().message()));
         c->gpu = *gpu;
         return absl::OkStatus();
       }},
      {{"gpu_precision", "GPU arithmetic: fp32, tf32 or bf16 (tensor cores)", true, false},
       "gpu",
       [](const std::string& key, const std::string& value, DeviceCostConfig* c) {
         if (value == "fp32") {
           c->gpu_precision = GpuPrecision::kFp32;
         } else if (value == "tf32") {
           c->gpu_precision = GpuPrecision::kTf32;
         } else if (value == "bf16") {
           c->gpu_precision = GpuPrecision::kBf16;
         } else {
           return Bad(key, value, "want fp32, tf32 or bf16");
         }
         return absl::OkStatus();
       }},
      {{"systolic_rows", "systolic array PE rows", false}, "device",
       IntField(1, 1 << 16, [](DeviceCostConfig* c, int64_t v) { c->systolic.rows = v; })},
      {{"systolic_cols", "systolic array PE columns (also the vector lanes)", false}, "device",
       IntField(1, 1 << 16, [](DeviceCostConfig* c, int64_t v) { c->systolic.cols = v; })},
      {{"systolic_dataflow", "os, ws or is", false, false}, "device",
       [](const std::string& key, const std::string& value, DeviceCostConfig* c) {
         absl::StatusOr<Dataflow> d = ParseDataflow(value);
         if (!d.ok()) return Bad(key, value, "want os, ws or is");
         c->systolic.dataflow = *d;
         return absl::OkStatus();
       }},
      {{"systolic_sram_kb", "all three SRAMs, KB each", false}, "device",
       IntField(1, 1 << 24,
                [](DeviceCostConfig* c, int64_t v) {
                  c->systolic.ifmap_sram_kb = c->systolic.filter_sram_kb =
                      c->systolic.ofmap_sram_kb = v;
                })},
      {{"systolic_ifmap_sram_kb", "input SRAM, KB", false}, "device",
       IntField(1, 1 << 24,
                [](DeviceCostConfig* c, int64_t v) { c->systolic.ifmap_sram_kb = v; })},
      {{"systolic_filter_sram_kb", "weight SRAM, KB", false}, "device",
       IntField(1, 1 << 24,
                [](DeviceCostConfig* c, int64_t v) { c->systolic.filter_sram_kb = v; })},
      {{"systolic_ofmap_sram_kb", "output SRAM, KB", false}, "device",
       IntField(1, 1 << 24,
                [](DeviceCostConfig* c, int64_t v) { c->systolic.ofmap_sram_kb = v; })},
      {{"systolic_word_bytes", "bytes per SRAM word (0: the operands')", false}, "device",
       IntField(0, 8, [](DeviceCostConfig* c, int64_t v) { c->systolic.sram_word_bytes = v; })},
      {{"systolic_dram_bw_words_per_cycle",
        "DRAM words a cycle per operand (0: unlimited, SCALE-Sim CALC)", false},
       "device",
       DoubleField(0, 1 << 20,
                   [](DeviceCostConfig* c, double v) { c->systolic.dram_bw_words_per_cycle = v; })},
      {{"systolic_clock_hz", "systolic array clock, Hz", false}, "device",
       DoubleField(1e3, 1e12, [](DeviceCostConfig* c, double v) { c->systolic.clock_hz = v; })},
      {{"systolic_bf16", "bf16 operands, fp32 accumulation", true, false}, "device",
       [](const std::string& key, const std::string& value, DeviceCostConfig* c) {
         bool on = false;
         if (absl::Status s = ParseBool(key, value, &on); !s.ok()) return s;
         c->systolic.precision = on ? SystolicPrecision::kBf16 : SystolicPrecision::kFp32;
         return absl::OkStatus();
       }},
      {{"reram_crossbar_rows", "crossbar rows (the ADC's full scale follows)", true}, "reram",
       IntField(8, 4096, [](DeviceCostConfig* c, int64_t v) { c->reram.crossbar_rows = v; })},
      {{"reram_crossbar_cols", "crossbar columns", true}, "reram",
       IntField(8, 4096, [](DeviceCostConfig* c, int64_t v) { c->reram.crossbar_cols = v; })},
      {{"reram_cell_bits", "bits per cell", true}, "reram",
       IntField(1, 8, [](DeviceCostConfig* c, int64_t v) { c->reram.cell_bits = int(v); })},
      {{"reram_weight_bits", "weight bits", true}, "reram",
       IntField(2, 16, [](DeviceCostConfig* c, int64_t v) { c->reram.weight_bits = int(v); })},
      {{"reram_input_bits", "input bits, applied bit-serially", true}, "reram",
       IntField(1, 16, [](DeviceCostConfig* c, int64_t v) { c->reram.input_bits = int(v); })},
      {{"reram_adc_bits", "ADC bits", true}, "reram",
       IntField(1, 16, [](DeviceCostConfig* c, int64_t v) { c->reram.adc_bits = int(v); })},
      {{"reram_cols_per_adc", "columns sharing one ADC", false}, "reram",
       IntField(1, 4096, [](DeviceCostConfig* c, int64_t v) { c->reram.cols_per_adc = v; })},
      {{"reram_clock_hz", "ReRAM node clock, Hz (its digital unit too)", false}, "reram",
       DoubleField(1e3, 1e12, [](DeviceCostConfig* c, double v) { c->reram.clock_hz = v; })},
      {{"reram_sign_mode", "offset or differential", true, false}, "reram",
       [](const std::string& key, const std::string& value, DeviceCostConfig* c) {
         if (value != "offset" && value != "differential") {
           return Bad(key, value, "want offset or differential");
         }
         c->reram.sign_mode = value == "offset" ? SignMode::kOffset : SignMode::kDifferential;
         return absl::OkStatus();
       }},
      {{"reram_program_noise", "programming noise, levels (numerics only)", true}, "reram",
       DoubleField(0, 1e3,
                   [](DeviceCostConfig* c, double v) { c->reram.program_noise_sigma = v; })},
      {{"reram_read_noise", "read noise, levels (numerics only)", true}, "reram",
       DoubleField(0, 1e3, [](DeviceCostConfig* c, double v) { c->reram.read_noise_sigma = v; })},
  };
  return *table;
}

}  // namespace

std::string SettingNumber(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(int64_t(value));
  }
  for (int digits = 6; digits <= 17; ++digits) {
    std::string s = absl::StrFormat("%.*g", digits, value);
    double back = 0;
    if (absl::SimpleAtod(s, &back) && back == value) return s;
  }
  return absl::StrFormat("%.17g", value);
}

DeviceCostConfig DefaultDeviceCostConfig(const std::string& kind) {
  DeviceCostConfig c;
  c.kind = kind;
  c.gpu = *GpuPreset("v100");
  return c;
}

const std::vector<CostSettingInfo>& DeviceCostSettings() {
  static const auto* table = [] {
    auto* v = new std::vector<CostSettingInfo>;
    for (const DeviceSetting& k : DeviceSettingTable()) v->push_back(k.info);
    return v;
  }();
  return *table;
}

const std::vector<CostSettingInfo>& CoordinatorCostSettings() {
  static const auto* table = new std::vector<CostSettingInfo>{
      {"reram_chip_tiles", "tiles of each ReRAM worker's chip (the layers' copies follow)",
       false},
      {"interconnect_gb_per_s", "link bandwidth between devices, GB/s", false},
      {"interconnect_latency_us", "link latency per transfer, us", false},
      {"interconnect_pj_per_byte", "link energy, pJ per byte", false},
      {"gpu_baseline",
       "how GPU steps run: paper (Python eager, per-parameter Adam), libtorch (C++ eager), "
       "fused (one multi-tensor Adam), graph (fused, the step replayed as a CUDA graph), "
       "bf16 (graph under bf16 autocast)",
       false, false},
  };
  return *table;
}

const CostSettingInfo* FindCostSetting(const std::string& key) {
  for (const auto* list : {&DeviceCostSettings(), &CoordinatorCostSettings()}) {
    for (const CostSettingInfo& k : *list) {
      if (k.key == key) return &k;
    }
  }
  return nullptr;
}

absl::Status ApplyDeviceSetting(const std::string& key, const std::string& value,
                                DeviceCostConfig* config) {
  for (const DeviceSetting& k : DeviceSettingTable()) {
    if (k.info.key != key) continue;
    const bool applies = k.kind == config->kind ||
                         (k.kind == "device" && config->kind != "gpu");
    if (!applies) return absl::OkStatus();
    return k.set(key, value, config);
  }
  for (const CostSettingInfo& k : CoordinatorCostSettings()) {
    if (k.key == key) {
      return absl::NotFoundError(absl::StrCat(key, " is a coordinator setting"));
    }
  }
  std::vector<std::string> names;
  for (const auto* list : {&DeviceCostSettings(), &CoordinatorCostSettings()}) {
    for (const CostSettingInfo& k : *list) names.push_back(k.key);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown setting '", key, "'; known: ",
                                                 absl::StrJoin(names, ", ")));
}

std::map<std::string, std::string> DeviceSettingsOf(const DeviceCostConfig& c) {
  std::map<std::string, std::string> s;
  if (c.kind == "gpu") {
    // A calibrated profile travels as its text, on one line.
    s["reference_gpu"] = IsGpuPreset(c.gpu.name)
                             ? c.gpu.name
                             : absl::StrReplaceAll(GpuProfileText(c.gpu), {{"\n", "; "}});
    s["gpu_precision"] = PrecisionName(c.gpu_precision);
    return s;
  }
  const SystolicConfig& a = c.systolic;
  s["systolic_rows"] = SettingNumber(double(a.rows));
  s["systolic_cols"] = SettingNumber(double(a.cols));
  s["systolic_dataflow"] = DataflowName(a.dataflow);
  s["systolic_ifmap_sram_kb"] = SettingNumber(double(a.ifmap_sram_kb));
  s["systolic_filter_sram_kb"] = SettingNumber(double(a.filter_sram_kb));
  s["systolic_ofmap_sram_kb"] = SettingNumber(double(a.ofmap_sram_kb));
  s["systolic_word_bytes"] = SettingNumber(double(a.sram_word_bytes));
  s["systolic_dram_bw_words_per_cycle"] = SettingNumber(a.dram_bw_words_per_cycle);
  s["systolic_clock_hz"] = SettingNumber(a.clock_hz);
  s["systolic_bf16"] = a.precision == SystolicPrecision::kBf16 ? "true" : "false";
  if (c.kind != "reram") return s;
  const ReramConfig& r = c.reram;
  s["reram_crossbar_rows"] = SettingNumber(double(r.crossbar_rows));
  s["reram_crossbar_cols"] = SettingNumber(double(r.crossbar_cols));
  s["reram_cell_bits"] = SettingNumber(r.cell_bits);
  s["reram_weight_bits"] = SettingNumber(r.weight_bits);
  s["reram_input_bits"] = SettingNumber(r.input_bits);
  s["reram_adc_bits"] = SettingNumber(r.adc_bits);
  s["reram_cols_per_adc"] = SettingNumber(double(r.cols_per_adc));
  s["reram_clock_hz"] = SettingNumber(r.clock_hz);
  s["reram_sign_mode"] = r.sign_mode == SignMode::kOffset ? "offset" : "differential";
  return s;
}

absl::StatusOr<DeviceCostConfig> DeviceCostConfigFrom(
    const std::string& kind, const std::map<std::string, std::string>& settings) {
  DeviceCostConfig c = DefaultDeviceCostConfig(kind);
  for (const auto& [key, value] : settings) {
    if (absl::Status s = ApplyDeviceSetting(key, value, &c); !s.ok()) return s;
  }
  return c;
}

}  // namespace hpt
