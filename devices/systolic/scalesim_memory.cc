#include "devices/systolic/scalesim_memory.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "devices/systolic/systolic_array.h"

namespace hpt {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One fold's demand on one operand: `in_rows` rows of `width` element ids
// (-1: nothing), after `prefix` empty rows and before `suffix` empty ones,
// optionally skewed (column c delayed by c rows, as data ripples across
// the array).
struct FoldDemand {
  int64_t in_rows = 0, width = 0, prefix = 0, suffix = 0;
  bool skew = false;
  std::function<int64_t(int64_t row, int64_t col)> at;  // 0 <= row < in_rows

  int64_t rows() const { return prefix + in_rows + suffix + (skew ? width - 1 : 0); }
  int64_t Get(int64_t row, int64_t col) const {
    const int64_t r = (skew ? row - col : row) - prefix;
    return r < 0 || r >= in_rows ? -1 : at(r, col);
  }
};

// The order an operand is fetched from DRAM: the blocks of a `stacked_rows`
// x `width` matrix, flattened by anti-diagonals or by rows.
struct FetchOrder {
  int64_t stacked_rows = 0, width = 0;
  bool diagonal = false;
  std::function<int64_t(int64_t row, int64_t col)> at;

  template <typename F>
  void ForEach(F f) const {
    if (!diagonal) {
      for (int64_t r = 0; r < stacked_rows; ++r) {
        for (int64_t c = 0; c < width; ++c) f(at(r, c));
      }
      return;
    }
    for (int64_t d = 0; d < stacked_rows + width - 1; ++d) {
      for (int64_t r = std::min(d, stacked_rows - 1); r >= std::max<int64_t>(0, d - width + 1);
           --r) {
        f(at(r, d - r));
      }
    }
  }
};

// Double-buffered read SRAM with a prefetching DRAM interface.
class ReadBuffer {
 public:
  ReadBuffer(int64_t sram_words, int64_t bw, int64_t ids, const FetchOrder& order)
      : bw_(bw), line_of_(ids, -1) {
    const int64_t active_words = (sram_words + 1) / 2;  // ceil(S * 0.5)
    prefetch_words_ = sram_words - active_words;
    const int64_t per_group = std::max<int64_t>(1, CeilDiv(sram_words, 100));
    int64_t valid = 0;
    order.ForEach([&](int64_t id) {
      if (id >= 0) line_of_[id] = valid++ / per_group;
    });
    lines_ = valid / per_group + 1;  // the last group may be empty
    active_lines_ = std::min(CeilDiv(active_words, per_group), lines_);
    prefetch_lines_ = std::min(CeilDiv(prefetch_words_, per_group), lines_ - active_lines_);
    fetch_rows_ = CeilDiv(order.stacked_rows * order.width, bw_);
    active_words_ = active_words;
  }

  // Serves one demand row issued at `cycle`; returns its stall cycles.
  int64_t Serve(const std::vector<int64_t>& row, int64_t cycle) {
    if (!started_) {
      // The first active half is fetched so that it lands just in time.
      started_ = true;
      last_fetch_ = cycle - 1;
      dram_words_ += std::min(CeilDiv(active_words_, bw_), fetch_rows_) * bw_;
      start_ = 0;
      end_ = active_lines_;
    }
    int64_t offset = 1;  // hit latency
    for (int64_t id : row) {
      if (id < 0) continue;
      while (!Active(line_of_[id])) {
        Prefetch();
        const int64_t wait = last_fetch_ - (cycle + offset);
        if (wait > 0) offset += wait;
      }
    }
    return offset - 1;
  }
  int64_t dram_words() const { return dram_words_; }

 private:
  bool Active(int64_t line) const {
    return start_ < end_ ? line >= start_ && line < end_ : line >= start_ || line < end_;
  }
  void Prefetch() {
    start_ = (start_ + prefetch_lines_) % lines_;
    end_ = (start_ + active_lines_) % lines_;
    const int64_t fetch_lines = CeilDiv(prefetch_words_, bw_);
    dram_words_ += fetch_lines * bw_;
    last_fetch_ += fetch_lines + 1;
  }

  int64_t bw_, prefetch_words_ = 0, active_words_ = 0;
  std::vector<int64_t> line_of_;
  int64_t lines_ = 1, active_lines_ = 1, prefetch_lines_ = 0, fetch_rows_ = 0;
  bool started_ = false;
  int64_t last_fetch_ = -1, start_ = 0, end_ = 1, dram_words_ = 0;
};

// Double-buffered write SRAM draining to DRAM.
class WriteBuffer {
 public:
  WriteBuffer(int64_t sram_words, int64_t bw)
      : words_(sram_words), bw_(bw), free_(sram_words) {
    active_ = (sram_words + 1) / 2;
    drain_ = sram_words - active_;
  }

  // Stores one output row at `cycle`; returns the cycle it is done.
  int64_t Write(const std::vector<int64_t>& row, int64_t cycle) {
    int64_t current = cycle;
    for (int64_t id : row) {
      if (id < 0) continue;
      Store();
      if (current < drain_end_) {
        if (free_ <= 0) current = drain_end_;
      } else if (free_ < words_ - drain_) {
        Commit(/*force=*/true);
        drain_end_ = Drain(current);
      }
    }
    return current;
  }
  // Drains what is left after the last row.
  void Flush(int64_t cycle) {
    Commit(/*force=*/true);
    while (drained_ < int64_t(lines_.size())) cycle = Drain(cycle) + 1;
  }
  int64_t dram_words() const { return dram_words_; }

 private:
  void Store() {
    ++line_fill_;
    --free_;
    if (line_fill_ == bw_) {
      pending_.push_back(bw_);
      line_fill_ = 0;
      // SCALE-Sim commits finished lines to its trace 1,024 at a time.
      if (pending_.size() >= 1024) Commit(/*force=*/false);
    }
  }
  void Commit(bool force) {
    if (force && line_fill_ != 0) {
      pending_.push_back(line_fill_);
      line_fill_ = 0;
    }
    lines_.insert(lines_.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }
  // Sends up to a drain half of committed lines, a line a cycle from
  // `start`; returns the cycle of the last.
  int64_t Drain(int64_t start) {
    const int64_t end = std::min<int64_t>(drained_ + CeilDiv(drain_, bw_), lines_.size());
    const int64_t count = end - drained_;
    if (count <= 0) return start - 1;
    // Full lines count whole; only the last line's empty slots are not sent.
    const int64_t words = count * bw_ - (bw_ - lines_[end - 1]);
    dram_words_ += words;
    free_ += words;
    drained_ = end;
    return start + count - 1;
  }

  int64_t words_, bw_, free_, active_ = 0, drain_ = 0;
  int64_t line_fill_ = 0, drain_end_ = 0, drained_ = 0, dram_words_ = 0;
  std::vector<int64_t> pending_, lines_;  // valid words per line
};

}  // namespace

// Long because it follows SCALE-Sim v2's own memory-system loop (double
// buffers filled from DRAM, stalls, drains) step for step, so the two can
// be read side by side; split, the correspondence would be lost.
ScaleSimMemoryResult SimulateScaleSimMemory(const ScaleSimMemoryConfig& config,
                                            int64_t m, int64_t n, int64_t k) {
  const int64_t R = config.rows, C = config.cols;
  // Element ids: input (m, k) -> m * K + k; weight (k, n) -> k * N + n;
  // outputs need no identity, only presence (0).
  auto input = [&](int64_t mi, int64_t ki) { return mi < m && ki < k ? mi * k + ki : -1; };
  auto weight = [&](int64_t ki, int64_t ni) { return ki < k && ni < n ? ki * n + ni : -1; };
  auto output = [](bool present) -> int64_t { return present ? 0 : -1; };

  // Per dataflow: spatial rows Sr, spatial columns Sc, temporal T; each
  // operand's fold demand and DRAM fetch order (SCALE-Sim's
  // systolic_compute_{os,ws,is}.py).
  int64_t sr = 0, sc = 0, t = 0;
  switch (config.dataflow) {
    case Dataflow::kOutputStationary: sr = m, sc = n, t = k; break;
    case Dataflow::kWeightStationary: sr = k, sc = n, t = m; break;
    case Dataflow::kInputStationary: sr = k, sc = m, t = n; break;
  }
  const int64_t row_folds = CeilDiv(sr, R), col_folds = CeilDiv(sc, C);
  int64_t fr = 0, fc = 0;  // the fold the demands below describe
  FoldDemand ifmap, filter, ofmap;
  FetchOrder ifmap_order, filter_order;
  switch (config.dataflow) {
    case Dataflow::kOutputStationary:
      ifmap = {t, R, 0, C - 1, true, [&](int64_t r, int64_t c) { return input(fr * R + c, r); }};
      filter = {t, C, 0, R - 1, true, [&](int64_t r, int64_t c) { return weight(r, fc * C + c); }};
      ofmap = {R, C, t - 1, 0, true, [&](int64_t r, int64_t c) {
                 return output(fr * R + (R - 1 - r) < m && fc * C + c < n);
               }};
      ifmap_order = {row_folds * k, R, true,
                     [&](int64_t r, int64_t c) { return input(r / k * R + c, r % k); }};
      filter_order = {col_folds * k, C, true,
                      [&](int64_t r, int64_t c) { return weight(r % k, r / k * C + c); }};
      break;
    case Dataflow::kWeightStationary:
      ifmap = {t, R, R, C - 1, true, [&](int64_t r, int64_t c) { return input(r, fr * R + c); }};
      filter = {R, C, 0, R + C + t - 2, false, [&](int64_t r, int64_t c) {
                  return weight(fr * R + (R - 1 - r), fc * C + c);
                }};
      ofmap = {t, C, 2 * R - 1, 0, true,
               [&](int64_t, int64_t c) { return output(fc * C + c < n); }};
      ifmap_order = {row_folds * m, R, true,
                     [&](int64_t r, int64_t c) { return input(r % m, r / m * R + c); }};
      filter_order = {col_folds * k, C, false,
                      [&](int64_t r, int64_t c) { return weight(r % k, r / k * C + c); }};
      break;
    case Dataflow::kInputStationary:
      ifmap = {R, C, 0, R + C + t - 2, false, [&](int64_t r, int64_t c) {
                 return input(fc * C + c, fr * R + (R - 1 - r));
               }};
      filter = {t, R, R, C - 1, true, [&](int64_t r, int64_t c) { return weight(fr * R + c, r); }};
      ofmap = {t, C, 2 * R - 1, 0, true,
               [&](int64_t, int64_t c) { return output(fc * C + c < m); }};
      ifmap_order = {col_folds * k, C, false,
                     [&](int64_t r, int64_t c) { return input(r / k * C + c, r % k); }};
      filter_order = {row_folds * n, R, true,
                      [&](int64_t r, int64_t c) { return weight(r / n * R + c, r % n); }};
      break;
  }
  const int64_t bw = std::max<int64_t>(1, config.dram_bw_words_per_cycle);
  ReadBuffer ifmap_buffer(config.ifmap_sram_words, bw, m * k, ifmap_order);
  ReadBuffer filter_buffer(config.filter_sram_words, bw, k * n, filter_order);
  WriteBuffer ofmap_buffer(config.ofmap_sram_words, bw);

  ScaleSimMemoryResult result;
  const int64_t rows_per_fold = ofmap.rows();
  std::vector<int64_t> in_row(ifmap.width), w_row(filter.width), out_row(ofmap.width);
  int64_t row = 0, last_out = 0;
  for (fc = 0; fc < col_folds; ++fc) {
    for (fr = 0; fr < row_folds; ++fr) {
      for (int64_t i = 0; i < rows_per_fold; ++i, ++row) {
        for (int64_t c = 0; c < ifmap.width; ++c) in_row[c] = ifmap.Get(i, c);
        for (int64_t c = 0; c < filter.width; ++c) w_row[c] = filter.Get(i, c);
        for (int64_t c = 0; c < ofmap.width; ++c) out_row[c] = ofmap.Get(i, c);
        const int64_t cycle = row + result.stall_cycles;
        const int64_t in_stall = ifmap_buffer.Serve(in_row, cycle);
        const int64_t w_stall = filter_buffer.Serve(w_row, cycle);
        last_out = ofmap_buffer.Write(out_row, cycle);
        result.stall_cycles += std::max({in_stall, w_stall, last_out - cycle});
      }
    }
  }
  ofmap_buffer.Flush(last_out);
  result.total_cycles = last_out;
  result.dram_ifmap_reads = ifmap_buffer.dram_words();
  result.dram_filter_reads = filter_buffer.dram_words();
  result.dram_ofmap_writes = ofmap_buffer.dram_words();
  return result;
}

}  // namespace hpt
