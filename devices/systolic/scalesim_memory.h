// The finite-DRAM-bandwidth memory system of SCALE-Sim v2 (its "USER"
// interface bandwidth), as a cycle model of one GEMM: the demand each
// cycle's row of the array makes on the ifmap, filter and ofmap SRAMs in a
// given dataflow, served by double-buffered read buffers that prefetch
// from DRAM and a write buffer that drains to it. Reproduces SCALE-Sim's
// total and stall cycles (checked in systolic_array_test against its runs).
//
// The model, as SCALE-Sim v2.0.2 (scalesim-project/scale-sim-v2 at
// 22f88b1) defines it:
//  - Each read operand is fetched from DRAM in a fixed order (its prefetch
//    order: per fold block, anti-diagonals or rows, as its dataflow
//    streams it), B words a cycle. The buffer tracks the fetched elements
//    in groups of ceil(S / 100) (S: SRAM words); half the SRAM is the
//    active part, the other half the prefetch part, each a whole number of
//    groups.
//  - A demanded element in the active groups is a hit (1 cycle). A miss
//    slides the active window forward by the prefetch part (circularly over
//    the operand) and costs a prefetch: ceil(prefetch words / B) + 1
//    cycles after the previous one; the array stalls until it lands.
//  - Outputs fill the write buffer; past half full it drains its oldest
//    ceil(half / B) lines of B words, one line a cycle, and the array waits
//    when the buffer is full and a drain is in flight.
//  - Each demand row issues at its row number plus the stalls so far; the
//    row's stall is the largest of the three operands'. Total cycles: the
//    cycle the last output row is served.
// Not thread-safe; plain C++ (no gRPC, no LibTorch).
#ifndef HPT_DEVICES_SYSTOLIC_SCALESIM_MEMORY_H_
#define HPT_DEVICES_SYSTOLIC_SCALESIM_MEMORY_H_

#include <cstdint>

namespace hpt {

enum class Dataflow;

struct ScaleSimMemoryConfig {
  int64_t rows = 0, cols = 0;  // array R x C
  Dataflow dataflow;
  int64_t ifmap_sram_words = 0, filter_sram_words = 0, ofmap_sram_words = 0;
  int64_t dram_bw_words_per_cycle = 1;  // B, each operand's interface
};

struct ScaleSimMemoryResult {
  int64_t total_cycles = 0;
  int64_t stall_cycles = 0;
  int64_t dram_ifmap_reads = 0, dram_filter_reads = 0, dram_ofmap_writes = 0;
};

// GEMM of M x K input and K x N weights.
ScaleSimMemoryResult SimulateScaleSimMemory(const ScaleSimMemoryConfig& config,
                                            int64_t m, int64_t n, int64_t k);

}  // namespace hpt

#endif  // HPT_DEVICES_SYSTOLIC_SCALESIM_MEMORY_H_
