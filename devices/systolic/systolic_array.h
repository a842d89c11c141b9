// A systolic array of rows x cols processing elements running GEMMs
// (M x K input times K x N weights) under output-, weight- or input-
// stationary dataflow: cycle counts, SRAM traffic, utilisation and mapping
// efficiency as SCALE-Sim v2 computes them, DRAM traffic and stalls for a
// given SRAM size and DRAM bandwidth, energy per MAC / SRAM word / DRAM
// byte, and the real product in fp32 (or bf16 operands, fp32 accumulate).
//
//   SystolicConfig config;                      // 128 x 128, OS, 1 GHz
//   SystolicReport r = SimulateGemm(config, {928, 512, 512});
//   std::cout << r.total_cycles << " cycles, " << r.energy_j << " J";
//
// Which SCALE-Sim: scalesim-project/scale-sim-v2, files
// scalesim/compute/systolic_compute_{os,ws,is}.py (commits 0b80b27,
// 11a8413, 1f53104), scalesim/single_layer_sim.py (187e81c) and
// scalesim/memory/double_buffered_scratchpad_mem.py (1eea742), GEMM input
// mode, InterfaceBandwidth CALC. Per fold each operand's demand matrix has
//   OS: T + R + C - 2 rows        (Sr = M, Sc = N, T = K)
//   WS: T + 2R + C - 2 rows       (Sr = K, Sc = N, T = M)
//   IS: T + 2R + C - 2 rows       (Sr = K, Sc = M, T = N)
// and total cycles = (folds x rows per fold) - 1: the cycle stamp of the
// last OFMAP demand row, with no stalls since CALC-mode read buffers never
// miss. Compute utilisation per fold uses SCALE-Sim's own per-fold cycle
// count (OS: T + R + C - 2; WS and IS: T + 2R + 2C - 3). The OS OFMAP write
// count includes SCALE-Sim's extra R + C per fold. Checked against
// SCALE-Sim's golden AlexNet-conv1 report (32 x 32 WS: 112283 cycles,
// 94.53125 % mapping, 90.78001 % compute util, 3294225 / 34848 / 3484800
// SRAM ifmap reads / filter reads / ofmap writes) in the test.
//
// DRAM: with a DRAM bandwidth of B words a cycle (SCALE-Sim's USER
// interface bandwidth), total and stall cycles and DRAM traffic are SCALE-
// Sim's memory system (scalesim_memory.h: prefetching read buffers and a
// draining write buffer, cycle by cycle). With 0 (unlimited, SCALE-Sim's
// CALC) there are no stalls, and DRAM traffic is estimated: an operand
// that fits half its SRAM is fetched once, otherwise once per pass the
// dataflow makes over it; WS/IS partial sums spill when the output does
// not fit.
#ifndef HPT_DEVICES_SYSTOLIC_SYSTOLIC_ARRAY_H_
#define HPT_DEVICES_SYSTOLIC_SYSTOLIC_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/gemm_shape.h"

namespace hpt {

enum class Dataflow { kOutputStationary, kWeightStationary, kInputStationary };

absl::StatusOr<Dataflow> ParseDataflow(const std::string& name);  // os|ws|is
std::string DataflowName(Dataflow dataflow);

enum class SystolicPrecision { kFp32, kBf16 };

struct SystolicConfig {
  int64_t rows = 128;  // PE rows (R)
  int64_t cols = 128;  // PE columns (C)
  Dataflow dataflow = Dataflow::kOutputStationary;
  // SRAM per operand. SCALE-Sim's configs/google.cfg (TPU-like) uses 6 MB /
  // 6 MB / 2 MB; we default to 1 MiB each, a mid-size accelerator tile.
  int64_t ifmap_sram_kb = 1024;
  int64_t filter_sram_kb = 1024;
  int64_t ofmap_sram_kb = 1024;
  // 0: unlimited (SCALE-Sim InterfaceBandwidth CALC, no stalls); else a
  // whole number of words a cycle per operand (InterfaceBandwidth USER,
  // its Bandwidth setting).
  double dram_bw_words_per_cycle = 0;
  // Bytes of an SRAM word, for the SRAMs' capacity in words. 0: the
  // operands' (4 for fp32, 2 for bf16). SCALE-Sim counts 1-byte words.
  int64_t sram_word_bytes = 0;
  // 1 GHz: NeuroSim V1.3 Param.cpp clkFreq default, used for both
  // accelerator models so their cycles compare on one clock.
  double clock_hz = 1e9;
  SystolicPrecision precision = SystolicPrecision::kFp32;

  // Energy, Horowitz, "Computing's energy problem", ISSCC 2014 (45 nm):
  // fp32 multiply 3.7 pJ + fp32 add 0.9 pJ; fp16 multiply 1.1 pJ (bf16
  // taken as fp16) accumulating in fp32 (0.9 pJ).
  double mac_energy_fp32_j = 4.6e-12;
  double mac_energy_bf16_j = 2.0e-12;
  // Same source: 64-bit read of an 8 KB SRAM 10 pJ -> 1.25 pJ per byte.
  double sram_energy_per_byte_j = 1.25e-12;
  // Same source: 32-bit DRAM read 640 pJ -> 160 pJ per byte.
  double dram_energy_per_byte_j = 160e-12;
};

absl::Status ValidateSystolicConfig(const SystolicConfig& config);

struct SystolicReport {
  int64_t folds = 0;
  int64_t compute_cycles = 0;  // SCALE-Sim total cycles without stalls
  int64_t stall_cycles = 0;
  int64_t total_cycles = 0;
  double overall_util_pct = 0;
  double mapping_eff_pct = 0;
  double compute_util_pct = 0;
  int64_t sram_ifmap_reads = 0;
  int64_t sram_filter_reads = 0;
  int64_t sram_ofmap_writes = 0;
  int64_t dram_ifmap_reads = 0;   // words
  int64_t dram_filter_reads = 0;  // words
  int64_t dram_ofmap_writes = 0;  // words
  int64_t macs = 0;
  double latency_s = 0;
  double energy_j = 0;
  double mac_energy_j = 0, sram_energy_j = 0, dram_energy_j = 0;
};

// Cost of one GEMM. Requires a valid config and positive dimensions.
SystolicReport SimulateGemm(const SystolicConfig& config, const GemmShape& gemm);

// out[m x n] = x[m x k] * w[k x n] with the array's numerics: fp32, or
// operands rounded to bf16 (round to nearest even) and fp32 accumulation.
void SystolicGemm(const SystolicConfig& config, const float* x, const float* w,
                  int64_t m, int64_t n, int64_t k, float* out);
// out[m x n] = x[m x k] * w^T with w stored [n x k].
void SystolicGemmBt(const SystolicConfig& config, const float* x, const float* w,
                    int64_t m, int64_t n, int64_t k, float* out);

// `n` values as the array takes them as an operand: `data` itself in fp32,
// or a bf16-rounded copy kept in `storage`. For callers that run strided
// products on the operand themselves.
const float* SystolicOperand(const SystolicConfig& config, const float* data, int64_t n,
                             std::vector<float>* storage);

// bf16 rounding (round to nearest even), for callers and tests.
float RoundToBf16(float v);

}  // namespace hpt

#endif  // HPT_DEVICES_SYSTOLIC_SYSTOLIC_ARRAY_H_
