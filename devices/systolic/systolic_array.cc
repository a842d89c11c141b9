#include "devices/systolic/systolic_array.h"

#include "devices/systolic/scalesim_memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/blas.h"

namespace hpt {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// SCALE-Sim's spatio-temporal mapping of a GEMM: the operand dimension laid
// along array rows (Sr), along columns (Sc), and streamed in time (T).
struct Mapping {
  int64_t sr, sc, t;
};

Mapping MapGemm(Dataflow dataflow, const GemmShape& g) {
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      return {g.m, g.n, g.k};
    case Dataflow::kWeightStationary:
      return {g.k, g.n, g.m};
    case Dataflow::kInputStationary:
      return {g.k, g.m, g.n};
  }
  return {0, 0, 0};
}

int64_t WordBytes(const SystolicConfig& c) {
  return c.precision == SystolicPrecision::kBf16 ? 2 : 4;
}

void BroadcastBf16(const float* in, int64_t n, std::vector<float>* out) {
  out->resize(n);
  for (int64_t i = 0; i < n; ++i) (*out)[i] = RoundToBf16(in[i]);
}

}  // namespace

absl::StatusOr<Dataflow> ParseDataflow(const std::string& name) {
  if (name == "os") return Dataflow::kOutputStationary;
  if (name == "ws") return Dataflow::kWeightStationary;
  if (name == "is") return Dataflow::kInputStationary;
  return absl::InvalidArgumentError(
      absl::StrCat("dataflow '", name, "' is not os, ws or is"));
}

std::string DataflowName(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::kOutputStationary:
      return "os";
    case Dataflow::kWeightStationary:
      return "ws";
    case Dataflow::kInputStationary:
      return "is";
  }
  return "?";
}

absl::Status ValidateSystolicConfig(const SystolicConfig& c) {
  if (c.rows < 1 || c.cols < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "systolic rows and cols must be positive, got ", c.rows, " x ", c.cols));
  }
  if (c.ifmap_sram_kb < 1 || c.filter_sram_kb < 1 || c.ofmap_sram_kb < 1) {
    return absl::InvalidArgumentError("systolic SRAM sizes must be at least 1 KB");
  }
  if (c.dram_bw_words_per_cycle > 0 &&
      c.dram_bw_words_per_cycle != std::floor(c.dram_bw_words_per_cycle)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dram_bw_words_per_cycle must be a whole number of words (or 0), got ",
        c.dram_bw_words_per_cycle));
  }
  if (c.sram_word_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sram_word_bytes must not be negative, got ", c.sram_word_bytes));
  }
  if (c.dram_bw_words_per_cycle < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dram_bw_words_per_cycle must not be negative, got ",
        c.dram_bw_words_per_cycle));
  }
  if (!(c.clock_hz > 0)) {
    return absl::InvalidArgumentError("systolic clock_hz must be positive");
  }
  return absl::OkStatus();
}

namespace {

// Compute (SCALE-Sim's compute module): the folds of the mapped operands
// over the array, their mapping efficiency and utilisation, the SRAM reads
// and writes of each fold, and the cycles with unlimited bandwidth.
void SimulateCompute(const SystolicConfig& config, const Mapping& map, int64_t row_folds,
                     int64_t col_folds, SystolicReport* report) {
  SystolicReport& r = *report;
  const int64_t R = config.rows, C = config.cols;
  const bool os = config.dataflow == Dataflow::kOutputStationary;
  const int64_t rows_per_fold = os ? map.t + R + C - 2 : map.t + 2 * R + C - 2;
  const int64_t util_cycles_per_fold =
      os ? map.t + R + C - 2 : map.t + 2 * R + 2 * C - 3;
  r.folds = row_folds * col_folds;
  double mapping_sum = 0, util_sum = 0;
  for (int64_t fc = 0; fc < col_folds; ++fc) {
    const int64_t col_used = std::min(C, map.sc - fc * C);
    for (int64_t fr = 0; fr < row_folds; ++fr) {
      const int64_t row_used = std::min(R, map.sr - fr * R);
      const int64_t used = row_used * col_used;
      mapping_sum += double(used) / double(R * C);
      util_sum += double(used) * double(map.t) /
                  (double(R * C) * double(util_cycles_per_fold));
      switch (config.dataflow) {
        case Dataflow::kOutputStationary:
          r.sram_ifmap_reads += map.t * row_used;
          r.sram_filter_reads += map.t * col_used;
          // SCALE-Sim also adds the padded fold's R + C here.
          r.sram_ofmap_writes += used + R + C;
          break;
        case Dataflow::kWeightStationary:
          r.sram_ifmap_reads += map.t * row_used;
          r.sram_filter_reads += used;
          r.sram_ofmap_writes += map.t * col_used;
          break;
        case Dataflow::kInputStationary:
          r.sram_ifmap_reads += used;
          r.sram_filter_reads += map.t * row_used;
          r.sram_ofmap_writes += map.t * col_used;
          break;
      }
    }
  }
  r.mapping_eff_pct = 100.0 * mapping_sum / r.folds;
  r.compute_util_pct = 100.0 * util_sum / r.folds;
  r.compute_cycles = r.folds * rows_per_fold - 1;

}

// Memory in CALC mode: DRAM words of each operand (whole, or again for
// every fold that re-reads it when it does not fit half its SRAM).
void CountDramWords(const SystolicConfig& config, const GemmShape& g, int64_t row_folds,
                    int64_t col_folds, SystolicReport* report) {
  SystolicReport& r = *report;
  const int64_t word = WordBytes(config);
  const int64_t ifmap_half = config.ifmap_sram_kb * 1024 / word / 2;
  const int64_t filter_half = config.filter_sram_kb * 1024 / word / 2;
  const int64_t ofmap_half = config.ofmap_sram_kb * 1024 / word / 2;
  const int64_t ifmap_words = g.m * g.k, filter_words = g.k * g.n,
                ofmap_words = g.m * g.n;
  const bool ifmap_fits = ifmap_words <= ifmap_half;
  const bool filter_fits = filter_words <= filter_half;
  const bool ofmap_fits = ofmap_words <= ofmap_half;
  switch (config.dataflow) {
    case Dataflow::kOutputStationary:
      r.dram_ifmap_reads = ifmap_words * (ifmap_fits ? 1 : col_folds);
      r.dram_filter_reads = filter_words * (filter_fits ? 1 : row_folds);
      r.dram_ofmap_writes = ofmap_words;
      break;
    case Dataflow::kWeightStationary:
    case Dataflow::kInputStationary: {
      const bool ws = config.dataflow == Dataflow::kWeightStationary;
      r.dram_ifmap_reads =
          ws ? ifmap_words * (ifmap_fits ? 1 : col_folds) : ifmap_words;
      r.dram_filter_reads =
          ws ? filter_words : filter_words * (filter_fits ? 1 : col_folds);
      // Partial sums across row folds stay in SRAM when the output fits;
      // otherwise each fold but the last writes them out and reads them back.
      r.dram_ofmap_writes =
          ofmap_fits ? ofmap_words : ofmap_words * (2 * row_folds - 1);
      break;
    }
  }
}

// Memory in USER mode (finite DRAM bandwidth): SCALE-Sim's double-buffered
// SRAM model gives the stalls and the DRAM traffic.
void SimulateMemory(const SystolicConfig& config, const GemmShape& g, SystolicReport* report) {
  SystolicReport& r = *report;
  const int64_t R = config.rows, C = config.cols;
  const int64_t word = WordBytes(config);
  const int64_t sram_word = config.sram_word_bytes > 0 ? config.sram_word_bytes : word;
  ScaleSimMemoryConfig memory;
  memory.rows = R;
  memory.cols = C;
  memory.dataflow = config.dataflow;
  memory.ifmap_sram_words = config.ifmap_sram_kb * 1024 / sram_word;
  memory.filter_sram_words = config.filter_sram_kb * 1024 / sram_word;
  memory.ofmap_sram_words = config.ofmap_sram_kb * 1024 / sram_word;
  memory.dram_bw_words_per_cycle = static_cast<int64_t>(config.dram_bw_words_per_cycle);
  const ScaleSimMemoryResult m = SimulateScaleSimMemory(memory, g.m, g.n, g.k);
  r.total_cycles = m.total_cycles;
  r.stall_cycles = m.stall_cycles;
  r.dram_ifmap_reads = m.dram_ifmap_reads;
  r.dram_filter_reads = m.dram_filter_reads;
  r.dram_ofmap_writes = m.dram_ofmap_writes;
}

}  // namespace

SystolicReport SimulateGemm(const SystolicConfig& config, const GemmShape& g) {
  const int64_t R = config.rows, C = config.cols;
  const Mapping map = MapGemm(config.dataflow, g);
  const int64_t row_folds = CeilDiv(map.sr, R), col_folds = CeilDiv(map.sc, C);
  SystolicReport r;
  SimulateCompute(config, map, row_folds, col_folds, &r);
  CountDramWords(config, g, row_folds, col_folds, &r);
  r.total_cycles = r.compute_cycles;
  if (config.dram_bw_words_per_cycle > 0) SimulateMemory(config, g, &r);
  const int64_t word = WordBytes(config);
  const int64_t dram_words =
      r.dram_ifmap_reads + r.dram_filter_reads + r.dram_ofmap_writes;
  r.macs = g.m * g.n * g.k;
  r.overall_util_pct =
      100.0 * double(r.macs) / (double(r.total_cycles) * double(R * C));
  r.latency_s = double(r.total_cycles) / config.clock_hz;
  r.mac_energy_j = double(r.macs) * (config.precision == SystolicPrecision::kBf16
                                         ? config.mac_energy_bf16_j
                                         : config.mac_energy_fp32_j);
  r.sram_energy_j =
      double(r.sram_ifmap_reads + r.sram_filter_reads + r.sram_ofmap_writes) *
      word * config.sram_energy_per_byte_j;
  r.dram_energy_j = double(dram_words) * word * config.dram_energy_per_byte_j;
  r.energy_j = r.mac_energy_j + r.sram_energy_j + r.dram_energy_j;
  return r;
}

float RoundToBf16(float v) {
  if (std::isnan(v)) return v;
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);  // ties to even
  bits = (bits + rounding) & 0xFFFF0000u;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

const float* SystolicOperand(const SystolicConfig& config, const float* data, int64_t n,
                             std::vector<float>* storage) {
  if (config.precision != SystolicPrecision::kBf16) return data;
  BroadcastBf16(data, n, storage);
  return storage->data();
}

void SystolicGemm(const SystolicConfig& config, const float* x, const float* w,
                  int64_t m, int64_t n, int64_t k, float* out) {
  std::vector<float> xb, wb;
  Sgemm(m, n, k, 1.0f, SystolicOperand(config, x, m * k, &xb), k,
        SystolicOperand(config, w, k * n, &wb), n, 0.0f, out, n);
}

void SystolicGemmBt(const SystolicConfig& config, const float* x, const float* w,
                    int64_t m, int64_t n, int64_t k, float* out) {
  std::vector<float> xb, wb;
  SgemmBt(m, n, k, 1.0f, SystolicOperand(config, x, m * k, &xb), k,
          SystolicOperand(config, w, n * k, &wb), k, 0.0f, out, n);
}

}  // namespace hpt
