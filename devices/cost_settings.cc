#include "devices/cost_settings.h"

#include <cmath>
#include <functional>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/enum_names.h"
#include "common/likely_names.h"
#include "devices/device_settings.h"

namespace hpt {
namespace {

absl::Status Bad(const std::string& label, const std::string& value, const std::string& want) {
  return absl::InvalidArgumentError(absl::StrCat(label, "='", value, "': ", want));
}

// A closed set's values with the names settings write them as, once: the
// parse and the name both read the table.
template <typename E>
struct Named {
  E value;
  const char* name;
};
constexpr Named<GpuPrecision> kGpuPrecisions[] = {
    {GpuPrecision::kFp32, "fp32"}, {GpuPrecision::kTf32, "tf32"}, {GpuPrecision::kBf16, "bf16"}};
constexpr Named<SignMode> kSignModes[] = {{SignMode::kDifferential, "differential"},
                                          {SignMode::kOffset, "offset"}};
constexpr Named<ReramNumerics> kReramNumerics[] = {{ReramNumerics::kFast, "fast"},
                                                   {ReramNumerics::kBitExact, "exact"}};

template <typename E, size_t N>
std::string NameIn(const Named<E> (&table)[N], E value) {
  for (const Named<E>& n : table) {
    if (n.value == value) return n.name;
  }
  return table[0].name;
}

// `value` as one of `table`'s names; else INVALID_ARGUMENT naming the
// setting and the names ("want fp32, tf32 or bf16").
template <typename E, size_t N>
absl::Status ParseIn(const Named<E> (&table)[N], const std::string& label, const std::string& value,
                     E* out) {
  std::vector<std::string> names;
  for (const Named<E>& n : table) {
    if (value == n.name) {
      *out = n.value;
      return absl::OkStatus();
    }
    names.push_back(n.name);
  }
  return Bad(label, value, "want " + JoinAlternatives(std::move(names)));
}

std::string PrecisionName(GpuPrecision p) { return NameIn(kGpuPrecisions, p); }

// `label` names the setting in errors: "setting systolic_rows" for a
// whatif, "--systolic_rows" for a worker flag.
using Setter = std::function<absl::Status(const std::string& label, const std::string& value,
                                          DeviceCostConfig*)>;
// The setting's value as a task's settings record it; null: not recorded.
using Getter = std::function<std::string(const DeviceCostConfig&)>;

enum class SettingScope { kGpu, kDeviceNodes, kReramNodes };

struct DeviceSetting {
  CostSettingInfo info;
  SettingScope scope;
  Setter set;
  Getter get;
};

bool Applies(SettingScope scope, DeviceKind::Name kind) {
  switch (scope) {
    case SettingScope::kGpu:
      return kind == DeviceKind::gpu;
    case SettingScope::kDeviceNodes:
      return kind == DeviceKind::reram || kind == DeviceKind::systolic;
    case SettingScope::kReramNodes:
      return kind == DeviceKind::reram;
  }
  return false;
}

// A number in [lo, hi], whole for integer fields.
template <typename T>
absl::Status ParseNumber(const std::string& label, const std::string& value, double lo, double hi,
                         T* out) {
  if constexpr (std::is_integral_v<T>) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(value, &v) || v < lo || v > hi) {
      return Bad(label, value, absl::StrCat("want a whole number in ", lo, "..", hi));
    }
    *out = T(v);
  } else {
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < lo || v > hi) {
      return Bad(label, value, absl::StrCat("want a number in ", lo, "..", hi));
    }
    *out = T(v);
  }
  return absl::OkStatus();
}

// The per-operand SRAMs: 0 leaves the size systolic_sram_kb gave.
absl::Status SetSram(int64_t SystolicConfig::*field, const std::string& label,
                     const std::string& value, DeviceCostConfig* c) {
  int64_t kb = 0;
  if (absl::Status s = ParseNumber(label, value, 0, 1 << 24, &kb); !s.ok()) return s;
  if (kb > 0) c->systolic.*field = kb;
  return absl::OkStatus();
}

absl::Status Set_systolic_dataflow(const std::string& label, const std::string& value,
                                   DeviceCostConfig* c) {
  absl::StatusOr<Dataflow> d = ParseDataflow(value);
  if (!d.ok()) return Bad(label, value, std::string(d.status().message()));
  c->systolic.dataflow = *d;
  return absl::OkStatus();
}
std::string Get_systolic_dataflow(const DeviceCostConfig& c) {
  return DataflowName(c.systolic.dataflow);
}
absl::Status Set_systolic_sram_kb(const std::string& label, const std::string& value,
                                  DeviceCostConfig* c) {
  int64_t kb = 0;
  if (absl::Status s = ParseNumber(label, value, 1, 1 << 24, &kb); !s.ok()) return s;
  c->systolic.ifmap_sram_kb = c->systolic.filter_sram_kb = c->systolic.ofmap_sram_kb = kb;
  return absl::OkStatus();
}
constexpr std::nullptr_t Get_systolic_sram_kb = nullptr;  // the three below say it
#define HPT_SRAM_SETTING(operand)                                                                \
  absl::Status Set_systolic_##operand##_sram_kb(const std::string& label,                        \
                                                const std::string& value, DeviceCostConfig* c) { \
    return SetSram(&SystolicConfig::operand##_sram_kb, label, value, c);                         \
  }                                                                                              \
  std::string Get_systolic_##operand##_sram_kb(const DeviceCostConfig& c) {                      \
    return SettingNumber(double(c.systolic.operand##_sram_kb));                                  \
  }
HPT_SRAM_SETTING(ifmap)
HPT_SRAM_SETTING(filter)
HPT_SRAM_SETTING(ofmap)
#undef HPT_SRAM_SETTING
absl::Status Set_systolic_bf16(const std::string& label, const std::string& value,
                               DeviceCostConfig* c) {
  bool on = false;
  if (!absl::SimpleAtob(value, &on)) return Bad(label, value, "want true or false");
  c->systolic.precision = on ? SystolicPrecision::kBf16 : SystolicPrecision::kFp32;
  return absl::OkStatus();
}
std::string Get_systolic_bf16(const DeviceCostConfig& c) {
  return c.systolic.precision == SystolicPrecision::kBf16 ? "true" : "false";
}
absl::Status Set_reram_sign_mode(const std::string& label, const std::string& value,
                                 DeviceCostConfig* c) {
  return ParseIn(kSignModes, label, value, &c->reram.sign_mode);
}
std::string Get_reram_sign_mode(const DeviceCostConfig& c) {
  return SignModeName(c.reram.sign_mode);
}
absl::Status Set_reram_numerics(const std::string& label, const std::string& value,
                                DeviceCostConfig* c) {
  return ParseIn(kReramNumerics, label, value, &c->reram.numerics);
}
constexpr std::nullptr_t Get_reram_numerics = nullptr;  // numerics only
absl::Status Set_reram_endurance(const std::string& label, const std::string& value,
                                 DeviceCostConfig* c) {
  return ParseNumber(label, value, 1, 1e18, &c->reram.endurance_writes);
}
constexpr std::nullptr_t Get_reram_endurance = nullptr;  // the wear report's, not a cost
absl::Status Set_reram_program_noise(const std::string& label, const std::string& value,
                                     DeviceCostConfig* c) {
  return ParseNumber(label, value, 0, 1e3, &c->reram.program_noise_sigma);
}
constexpr std::nullptr_t Get_reram_program_noise = nullptr;  // numerics only
absl::Status Set_reram_read_noise(const std::string& label, const std::string& value,
                                  DeviceCostConfig* c) {
  return ParseNumber(label, value, 0, 1e3, &c->reram.read_noise_sigma);
}
constexpr std::nullptr_t Get_reram_read_noise = nullptr;  // numerics only
absl::Status Set_reram_seed(const std::string& label, const std::string& value,
                            DeviceCostConfig* c) {
  if (!absl::SimpleAtoi(value, &c->reram.seed)) {
    return Bad(label, value, "want a whole number >= 0");
  }
  return absl::OkStatus();
}
constexpr std::nullptr_t Get_reram_seed = nullptr;  // numerics only

// The GPU worker's settings, then every line of device_settings.h.
const std::vector<DeviceSetting>& DeviceSettingTable() {
  static const auto* table = [] {
    auto* t = new std::vector<DeviceSetting>{
        {{"reference_gpu",
          "GPU profile the GPU workers are costed as: a preset (v100, a100, h100, ...: a name it "
          "does not know lists them), or a profile file (hpt_calibrate)",
          false, false},
         SettingScope::kGpu,
         [](const std::string& label, const std::string& value, DeviceCostConfig* c) {
           absl::StatusOr<GpuSpec> gpu = GpuProfileOrPreset(value);
           if (!gpu.ok()) return Bad(label, value, std::string(gpu.status().message()));
           c->gpu = *gpu;
           return absl::OkStatus();
         },
         [](const DeviceCostConfig& c) {
           // A calibrated profile travels as its text, on one line.
           return IsGpuPreset(c.gpu.name)
                      ? c.gpu.name
                      : absl::StrReplaceAll(GpuProfileText(c.gpu), {{"\n", "; "}});
         }},
        {{"gpu_precision", "GPU arithmetic: fp32, tf32 or bf16 (tensor cores)", true, false},
         SettingScope::kGpu,
         [](const std::string& label, const std::string& value, DeviceCostConfig* c) {
           return ParseIn(kGpuPrecisions, label, value, &c->gpu_precision);
         },
         [](const DeviceCostConfig& c) { return PrecisionName(c.gpu_precision); }},
    };
#define HPT_NUMBER_ROW(type, name, applies, field, lo, hi, numerics, help)                    \
  t->push_back({{#name, help, numerics, true},                                                \
                SettingScope::applies,                                                        \
                [](const std::string& label, const std::string& value, DeviceCostConfig* c) { \
                  return ParseNumber(label, value, lo, hi, &c->field);                        \
                },                                                                            \
                [](const DeviceCostConfig& c) { return SettingNumber(double(c.field)); }});
    HPT_NUMBER_SETTINGS(HPT_NUMBER_ROW)
#undef HPT_NUMBER_ROW
#define HPT_OTHER_ROW(type, name, applies, flag_default, numerics, takes_number, help) \
  t->push_back({{#name, help, numerics, takes_number},                                 \
                SettingScope::applies,                                                 \
                Setter(Set_##name),                                                    \
                Getter(Get_##name)});
    HPT_OTHER_SETTINGS(HPT_OTHER_ROW)
#undef HPT_OTHER_ROW
    return t;
  }();
  return *table;
}

const DeviceSetting* FindDeviceSetting(const std::string& key) {
  for (const DeviceSetting& k : DeviceSettingTable()) {
    if (k.info.key == key) return &k;
  }
  return nullptr;
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

DeviceCostConfig DefaultDeviceCostConfig(DeviceKind::Name kind) {
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
  if (const DeviceSetting* k = FindDeviceSetting(key)) {
    if (!Applies(k->scope, config->kind)) return absl::OkStatus();
    return k->set("setting " + key, value, config);
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
  return absl::InvalidArgumentError(absl::StrCat("unknown setting '", key, "'",
                                                 DidYouMean(key, names),
                                                 "; known: ", absl::StrJoin(names, ", ")));
}

absl::Status ApplyDeviceFlag(const std::string& name, const std::string& value,
                             DeviceCostConfig* config) {
  const DeviceSetting* k = FindDeviceSetting(name);
  if (k == nullptr) return absl::InternalError(absl::StrCat("no device setting '", name, "'"));
  if (!Applies(k->scope, config->kind)) return absl::OkStatus();
  return k->set("--" + name, value, config);
}

std::map<std::string, std::string> DeviceSettingsOf(const DeviceCostConfig& c) {
  std::map<std::string, std::string> s;
  for (const DeviceSetting& k : DeviceSettingTable()) {
    if (k.get && Applies(k.scope, c.kind)) s[k.info.key] = k.get(c);
  }
  return s;
}

std::string SignModeName(SignMode mode) { return NameIn(kSignModes, mode); }

std::string ReramNumericsName(ReramNumerics numerics) { return NameIn(kReramNumerics, numerics); }

absl::StatusOr<DeviceCostConfig> DeviceCostConfigFrom(
    DeviceKind::Name kind, const std::map<std::string, std::string>& settings) {
  DeviceCostConfig c = DefaultDeviceCostConfig(kind);
  for (const auto& [key, value] : settings) {
    if (absl::Status s = ApplyDeviceSetting(key, value, &c); !s.ok()) return s;
  }
  return c;
}

}  // namespace hpt
