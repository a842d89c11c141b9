// The profile's text form (devices/gpu/roofline.h): writing a GpuSpec as
// "key = value" lines, and reading one back with every check a profile
// must pass, naming the line of what fails. The presets and the roofline
// are in roofline.cc.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/user_file.h"
#include "devices/gpu/roofline.h"

namespace hpt {
namespace {

std::string Number(double v) { return absl::StrFormat("%.6g", v); }

std::string RatesText(const std::vector<std::pair<double, double>>& rates) {
  std::vector<std::string> pairs;
  for (const auto& [size, rate] : rates) pairs.push_back(absl::StrCat(Number(size), ":", Number(rate)));
  return absl::StrJoin(pairs, ",");
}

std::string TilesText(const std::vector<std::pair<int64_t, int64_t>>& tiles) {
  std::vector<std::string> each;
  for (const auto& [rows, columns] : tiles) each.push_back(absl::StrCat(rows, "x", columns));
  return absl::StrJoin(each, ",");
}

// "RxC,RxC": thread-block tiles of rows by columns, each from 1 to 1,024.
absl::Status ParseTiles(absl::string_view value, std::vector<std::pair<int64_t, int64_t>>* tiles) {
  tiles->clear();
  for (absl::string_view tile : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> rc = absl::StrSplit(absl::StripAsciiWhitespace(tile), 'x');
    int64_t rows = 0, columns = 0;
    if (rc.size() != 2 || !absl::SimpleAtoi(rc[0], &rows) || !absl::SimpleAtoi(rc[1], &columns) ||
        rows < 1 || columns < 1 || rows > 1024 || columns > 1024) {
      return absl::InvalidArgumentError(absl::StrCat(
          "want tiles as ROWSxCOLUMNS of whole numbers from 1 to 1024, such as 128x128,64x64; "
          "got '",
          tile, "'"));
    }
    tiles->push_back({rows, columns});
  }
  return absl::OkStatus();
}

absl::Status ParseRates(absl::string_view value, std::vector<std::pair<double, double>>* rates) {
  rates->clear();
  for (absl::string_view pair : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> fr = absl::StrSplit(pair, ':');
    double f = 0, r = 0;
    if (fr.size() != 2 || !absl::SimpleAtod(fr[0], &f) || !absl::SimpleAtod(fr[1], &r) ||
        !(f > 0) || !(r > 0) || !std::isfinite(f) || !std::isfinite(r)) {
      return absl::InvalidArgumentError(
          absl::StrCat("want size:rate pairs of numbers > 0, got '", pair, "'"));
    }
    // Written by size, as hpt_calibrate writes them: a size out of order
    // is a table edited or joined by hand.
    if (!rates->empty() && f <= rates->back().first) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sizes must ascend, and ", Number(f), " follows ", Number(rates->back().first),
          ": list the pairs by size"));
    }
    rates->push_back({f, r});
  }
  return absl::OkStatus();
}

}  // namespace

std::string GpuProfileText(const GpuSpec& g) {
  std::string name = g.name;
  std::replace(name.begin(), name.end(), ';', ',');
  std::string source = g.source;
  std::replace(source.begin(), source.end(), ';', ',');
  return absl::StrCat(
      "name = ", name, "\nsource = ", source, "\nfp32_flops = ", Number(g.fp32_flops),
      "\ntf32_flops = ", Number(g.tf32_flops), "\nbf16_flops = ", Number(g.bf16_flops),
      "\nmemory_bw = ", Number(g.memory_bw), "\ncompute_share = ", Number(g.compute_share),
      "\nmemory_share = ", Number(g.memory_share), "\ngemm_rates = ", RatesText(g.gemm_rates),
      "\nmemory_rates = ", RatesText(g.memory_rates), "\ngemm_grid = ", GemmGridText(g.gemm_grid),
      "\ngemm_grid_nt = ", GemmGridText(g.gemm_grid_nt),
      "\ngemm_grid_tn = ", GemmGridText(g.gemm_grid_tn),
      "\ngemm_grid_streamed = ", GemmGridText(g.gemm_grid_streamed),
      "\ngemm_grid_streamed_result = ", GemmGridText(g.gemm_grid_streamed_result),
      "\nattention_grid = ", GemmGridText(g.attention_grid),
      "\nattention_backward_grid = ", GemmGridText(g.attention_backward_grid),
      "\nattention_call_s = ", Number(g.attention_call_s),
      "\nattention_backward_call_s = ", Number(g.attention_backward_call_s),
      "\nnorm_grid = ", GemmGridText(g.norm_grid),
      "\nnorm_backward_grid = ", GemmGridText(g.norm_backward_grid),
      "\nsoftmax_grid = ", GemmGridText(g.softmax_grid),
      "\nsoftmax_backward_grid = ", GemmGridText(g.softmax_backward_grid),
      "\ngemm_grid_batched = ", GemmGridText(g.gemm_grid_batched),
      "\nbatched_tiles = ", TilesText(g.batched_tiles), "\nsm_count = ", Number(g.sm_count),
      "\nmemory_rates_streamed = ", RatesText(g.memory_rates_streamed),
      "\nmemory_rates_inplace = ", RatesText(g.memory_rates_inplace),
      "\ncache_bytes = ", Number(g.cache_bytes), "\ndispatch_s = ", Number(g.dispatch_s),
      "\nhost_op_s = ", Number(g.host_op_s), "\nframe_s = ", Number(g.frame_s),
      "\nhistory_s = ", Number(g.history_s), "\nnode_s = ", Number(g.node_s),
      "\npython_op_s = ", Number(g.python_op_s), "\ngraph_node_s = ", Number(g.graph_node_s),
      "\nmin_kernel_s = ", Number(g.min_kernel_s),
      "\nsynchronous = ", g.synchronous ? "true" : "false",
      "\nidle_power_w = ", Number(g.idle_power_w), "\nactive_power_w = ", Number(g.active_power_w),
      "\nload_power_w = ", Number(g.load_power_w), "\n");
}

namespace {

// One "key = value" entry into `g`. `quote`: messages may quote the value
// (text a person typed); a file's values are never quoted back.
absl::Status ParseProfileEntry(const std::string& key, const std::string& value, bool quote,
                               GpuSpec* g, bool* has_host_op_s) {
  auto want = [&](absl::string_view what, absl::string_view detail = "") {
    if (!quote) return absl::InvalidArgumentError(what);
    return absl::InvalidArgumentError(
        detail.empty() ? absl::StrCat(what, ", got '", value, "'") : std::string(detail));
  };
  if (key == "name") { g->name = value; return absl::OkStatus(); }
  if (key == "source") { g->source = value; return absl::OkStatus(); }
  if (key == "synchronous") {
    if (value != "true" && value != "false") return want("want true or false");
    g->synchronous = value == "true";
    return absl::OkStatus();
  }
  if (key == "batched_tiles") {
    absl::Status st = ParseTiles(value, &g->batched_tiles);
    return st.ok() ? st
                   : want("want ROWSxCOLUMNS tiles from 1 to 1024, such as 128x128,64x64",
                          st.message());
  }
  std::vector<std::pair<double, double>>* rates =
      key == "gemm_rates"              ? &g->gemm_rates
      : key == "memory_rates"          ? &g->memory_rates
      : key == "memory_rates_streamed" ? &g->memory_rates_streamed
      : key == "memory_rates_inplace"  ? &g->memory_rates_inplace
                                       : nullptr;
  if (rates != nullptr) {
    absl::Status st = ParseRates(value, rates);
    return st.ok() ? st : want("want size:rate pairs", st.message());
  }
  GemmGrid* grid = key == "gemm_grid"                   ? &g->gemm_grid
                   : key == "gemm_grid_nt"              ? &g->gemm_grid_nt
                   : key == "gemm_grid_tn"              ? &g->gemm_grid_tn
                   : key == "gemm_grid_streamed"        ? &g->gemm_grid_streamed
                   : key == "gemm_grid_streamed_result" ? &g->gemm_grid_streamed_result
                   : key == "attention_grid"            ? &g->attention_grid
                   : key == "attention_backward_grid"   ? &g->attention_backward_grid
                   : key == "norm_grid"                 ? &g->norm_grid
                   : key == "norm_backward_grid"        ? &g->norm_backward_grid
                   : key == "softmax_grid"              ? &g->softmax_grid
                   : key == "softmax_backward_grid"     ? &g->softmax_backward_grid
                   : key == "gemm_grid_batched"         ? &g->gemm_grid_batched
                                                        : nullptr;
  if (grid != nullptr) {
    absl::StatusOr<GemmGrid> parsed = ParseGemmGrid(value);
    if (!parsed.ok()) return want("want MxKxN:rate entries", parsed.status().message());
    *grid = *std::move(parsed);
    return absl::OkStatus();
  }
  const std::pair<const char*, double*> numbers[] = {
      {"fp32_flops", &g->fp32_flops},
      {"tf32_flops", &g->tf32_flops},
      {"bf16_flops", &g->bf16_flops},
      {"memory_bw", &g->memory_bw},
      {"compute_share", &g->compute_share},
      {"memory_share", &g->memory_share},
      {"dispatch_s", &g->dispatch_s},
      {"host_op_s", &g->host_op_s},
      {"python_op_s", &g->python_op_s},
      {"frame_s", &g->frame_s},
      {"history_s", &g->history_s},
      {"node_s", &g->node_s},
      {"graph_node_s", &g->graph_node_s},
      {"min_kernel_s", &g->min_kernel_s},
      {"idle_power_w", &g->idle_power_w},
      {"active_power_w", &g->active_power_w},
      {"load_power_w", &g->load_power_w},
      {"cache_bytes", &g->cache_bytes},
      {"sm_count", &g->sm_count},
      {"attention_call_s", &g->attention_call_s},
      {"attention_backward_call_s", &g->attention_backward_call_s},
  };
  for (const auto& [name, field] : numbers) {
    if (key != name) continue;
    if (!absl::SimpleAtod(value, field) || !std::isfinite(*field) || *field < 0) {
      return want("want a number >= 0");
    }
    if (key == "host_op_s") *has_host_op_s = true;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown key");
}

// A key fit to repeat in a message: a short identifier.
bool PlainKey(absl::string_view key) {
  return !key.empty() && key.size() <= 40 &&
         std::all_of(key.begin(), key.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// A FLOP/s table of `g` with a rate past the profile's fp32 peak (its
// fastest units that can run an fp32 product: fp32_flops, or tf32_flops
// where larger): no kernel outruns its device, so such a rate is a time
// shorter than the clock resolves. `where(key)` places the table's entry.
template <typename Where>
absl::Status CheckReachable(const GpuSpec& g, const Where& where) {
  const double peak = std::max(g.fp32_flops, g.tf32_flops);
  // Table `key` of `n` entries, the i-th's rate and name.
  auto check = [&](const char* key, size_t n, auto rate_at, auto name_of) {
    int over = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rate_at(i) > peak && over++ == 0) first = i;
    }
    if (over == 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        where(key), " (", key, "): ", over, " of its ", n, " rates are above the profile's fp32 "
        "peak of ", Number(peak), " FLOP/s (fp32_flops), the first ", Number(rate_at(first)),
        " at ", name_of(first), ": no kernel outruns its device, so such a rate is a time too "
        "short to measure. Re-run hpt_calibrate, which rates such kernels at the best product "
        "rate it measured; or, where the peak is what is wrong, raise fp32_flops"));
  };
  const auto& sizes = g.gemm_rates;
  absl::Status s = check(
      "gemm_rates", sizes.size(), [&](size_t i) { return sizes[i].second; },
      [&](size_t i) { return "size " + Number(sizes[i].first); });
  if (!s.ok()) return s;
  const std::pair<const char*, const GemmGrid*> grids[] = {
      {"gemm_grid", &g.gemm_grid},
      {"gemm_grid_nt", &g.gemm_grid_nt},
      {"gemm_grid_tn", &g.gemm_grid_tn},
      {"gemm_grid_streamed", &g.gemm_grid_streamed},
      {"gemm_grid_streamed_result", &g.gemm_grid_streamed_result},
      {"gemm_grid_batched", &g.gemm_grid_batched},
      {"attention_grid", &g.attention_grid},
      {"attention_backward_grid", &g.attention_backward_grid}};
  for (const auto& entry : grids) {
    const char* key = entry.first;
    const GemmGrid* grid = entry.second;     // a plain name: lambdas capture it
    if (grid->BestRate() <= peak) continue;  // a sweep re-parses: skip what passes
    // Entry e of the grid's m-major, then k, then n order.
    const size_t k = grid->k().size(), n = grid->n().size();
    s = check(
        key, grid->m().size() * k * n,
        [&](size_t e) { return grid->RateAt(e / (k * n), e / n % k, e % n); },
        [&](size_t e) {
          return absl::StrCat(grid->m()[e / (k * n)], "x", grid->k()[e / n % k], "x",
                              grid->n()[e % n]);
        });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// `file`: the profile came from that file; messages name its lines and
// quote none of its text. Otherwise they number entries and quote them.
absl::StatusOr<GpuSpec> ParseProfile(const std::string& text, const std::string* file) {
  GpuSpec g;
  bool has_host_op_s = false;
  int line_no = 0, entry_no = 0;
  // Each key's line and entry, for checks of the whole profile.
  std::map<std::string, std::pair<int, int>> placed;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    // A comment runs to the end of its line, ';' and all.
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    for (absl::string_view entry : absl::StrSplit(line, ';')) {
      ++entry_no;
      entry = absl::StripAsciiWhitespace(entry);
      if (entry.empty()) continue;
      // Built only on an error: a sweep re-parses an inline profile at every point.
      auto where = [&] {
        return file != nullptr ? absl::StrCat("gpu profile ", *file, " line ", line_no)
                               : absl::StrCat("gpu profile entry ", entry_no);
      };
      const size_t eq = entry.find('=');
      if (eq == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), ": want key = value", file != nullptr ? "" : absl::StrCat(", got '", entry, "'")));
      }
      const std::string key(absl::StripAsciiWhitespace(entry.substr(0, eq)));
      const std::string value(absl::StripAsciiWhitespace(entry.substr(eq + 1)));
      placed[key] = {line_no, entry_no};
      absl::Status st = ParseProfileEntry(key, value, file == nullptr, &g, &has_host_op_s);
      if (!st.ok()) {
        const bool name_key = file == nullptr || PlainKey(key);
        return absl::InvalidArgumentError(
            absl::StrCat(where(), name_key ? absl::StrCat(" (", key, ")") : "", ": ", st.message()));
      }
    }
  }
  const std::string what = file != nullptr ? absl::StrCat("gpu profile ", *file) : "gpu profile";
  if (g.name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": name is missing"));
  // A file is named by its path; its name line is its text, not quoted.
  const std::string named = file != nullptr ? what : absl::StrCat(what, " '", g.name, "'");
  // A profile from before host_op_s priced a kernel-less op as a launch.
  if (!has_host_op_s) g.host_op_s = g.dispatch_s;
  if (g.fp32_flops <= 0 || g.memory_bw <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(named, ": fp32_flops and memory_bw must be > 0"));
  }
  if (g.compute_share <= 0 || g.compute_share > 1 || g.memory_share <= 0 ||
      g.memory_share > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        named, ": compute_share and memory_share must be in (0, 1]"));
  }
  absl::Status reachable = CheckReachable(g, [&](const std::string& key) {
    const auto [line, entry] = placed[key];
    return file != nullptr ? absl::StrCat("gpu profile ", *file, " line ", line)
                           : absl::StrCat("gpu profile entry ", entry);
  });
  if (!reachable.ok()) return reachable;
  return g;
}

}  // namespace

absl::StatusOr<GpuSpec> ParseGpuProfile(const std::string& text) {
  return ParseProfile(text, nullptr);
}

absl::StatusOr<GpuSpec> GpuProfileOrPreset(const std::string& value) {
  if (value.find('=') != std::string::npos) return ParseGpuProfile(value);
  return GpuPreset(value);
}

absl::StatusOr<std::string> ReferenceGpuValue(const std::string& value) {
  if (IsGpuPreset(value) || value.find('=') != std::string::npos) return value;
  const bool looks_like_path = value.find('/') != std::string::npos ||
                               absl::EndsWith(value, ".profile");
  struct stat st;
  if (!looks_like_path && stat(value.c_str(), &st) != 0) return value;  // GpuPreset names the choices
  absl::StatusOr<std::string> text = ReadUserTextFile(value, kMaxGpuProfileBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("reference_gpu: ", text.status().message()));
  }
  // Checked here, where the file is named, so that errors give its lines;
  // what travels on is the profile's text on one line.
  if (absl::StatusOr<GpuSpec> parsed = ParseProfile(*text, &value); !parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("reference_gpu: ", parsed.status().message()));
  }
  // Its comments stay behind: on one line a '#' would hide what follows.
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    lines.emplace_back(line.substr(0, line.find('#')));
  }
  return absl::StrJoin(lines, "; ");
}

}  // namespace hpt
