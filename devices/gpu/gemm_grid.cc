#include "devices/gpu/gemm_grid.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hpt {
namespace {

bool Ascending(const std::vector<int64_t>& axis) {
  if (axis.empty() || axis.front() <= 0) return false;
  for (size_t i = 1; i < axis.size(); ++i) {
    if (axis[i] <= axis[i - 1]) return false;
  }
  return true;
}

// Where `v` falls on `axis`: the lower index and the weight of the upper
// one, in log space, held at the ends.
std::pair<size_t, double> Locate(const std::vector<int64_t>& axis, double v) {
  if (axis.size() == 1 || v <= double(axis.front())) return {0, 0.0};
  if (v >= double(axis.back())) return {axis.size() - 2, 1.0};
  size_t hi = size_t(std::upper_bound(axis.begin(), axis.end(), int64_t(v)) - axis.begin());
  hi = std::min(std::max<size_t>(hi, 1), axis.size() - 1);
  const double lo_v = double(axis[hi - 1]), hi_v = double(axis[hi]);
  return {hi - 1, std::log(v / lo_v) / std::log(hi_v / lo_v)};
}

}  // namespace

absl::StatusOr<GemmGrid> GemmGrid::Make(std::vector<int64_t> m, std::vector<int64_t> k,
                                        std::vector<int64_t> n, std::vector<double> rates) {
  if (!Ascending(m) || !Ascending(k) || !Ascending(n)) {
    return absl::InvalidArgumentError("gemm grid: each axis must be positive and ascending");
  }
  if (rates.size() != m.size() * k.size() * n.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gemm grid: ", m.size(), " x ", k.size(), " x ", n.size(), " shapes want as many rates, got ",
        rates.size()));
  }
  for (double r : rates) {
    if (!(r > 0) || !std::isfinite(r)) {
      return absl::InvalidArgumentError("gemm grid: every rate must be a number > 0");
    }
  }
  GemmGrid g;
  g.m_ = std::move(m);
  g.k_ = std::move(k);
  g.n_ = std::move(n);
  g.rates_ = std::move(rates);
  if (!g.rates_.empty()) g.best_rate_ = *std::max_element(g.rates_.begin(), g.rates_.end());
  return g;
}

int GemmGrid::CapRates(double cap) {
  int capped = 0;
  for (double& r : rates_) {
    if (r <= cap) continue;
    r = cap;
    ++capped;
  }
  if (capped > 0) best_rate_ = cap;
  return capped;
}

double GemmGrid::Rate(const GemmShape& s) const {
  if (empty()) return 0;
  const auto [i, wi] = Locate(m_, double(s.m));
  const auto [j, wj] = Locate(k_, double(s.k));
  const auto [l, wl] = Locate(n_, double(s.n));
  // Explicit captures: a structured binding cannot be captured by reference in C++17.
  auto at = [this, i = i, j = j, l = l](size_t di, size_t dj, size_t dl) {
    return RateAt(std::min(i + di, m_.size() - 1), std::min(j + dj, k_.size() - 1),
                  std::min(l + dl, n_.size() - 1));
  };
  double log_rate = 0;
  for (size_t di = 0; di < 2; ++di) {
    for (size_t dj = 0; dj < 2; ++dj) {
      for (size_t dl = 0; dl < 2; ++dl) {
        const double w = (di ? wi : 1 - wi) * (dj ? wj : 1 - wj) * (dl ? wl : 1 - wl);
        if (w == 1) return at(di, dj, dl);  // on a measured point
        if (w > 0) log_rate += w * std::log(at(di, dj, dl));
      }
    }
  }
  return std::exp(log_rate);
}

std::string GemmGridText(const GemmGrid& g) {
  std::vector<std::string> entries;
  for (size_t i = 0; i < g.m().size(); ++i) {
    for (size_t j = 0; j < g.k().size(); ++j) {
      for (size_t l = 0; l < g.n().size(); ++l) {
        entries.push_back(absl::StrFormat("%dx%dx%d:%.6g", g.m()[i], g.k()[j], g.n()[l],
                                          g.RateAt(i, j, l)));
      }
    }
  }
  return absl::StrJoin(entries, ",");
}

absl::StatusOr<GemmGrid> ParseGemmGrid(absl::string_view text) {
  std::map<GemmShape, double> rates;
  int entry = 0;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    ++entry;
    item = absl::StripAsciiWhitespace(item);
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("gemm grid entry ", entry, " ('", item, "'): ", why));
    };
    std::vector<absl::string_view> shape_rate = absl::StrSplit(item, ':');
    if (shape_rate.size() != 2) return bad("want MxKxN:rate");
    std::vector<absl::string_view> dims = absl::StrSplit(shape_rate[0], 'x');
    GemmShape s;
    double rate = 0;
    if (dims.size() != 3 || !absl::SimpleAtoi(dims[0], &s.m) || !absl::SimpleAtoi(dims[1], &s.k) ||
        !absl::SimpleAtoi(dims[2], &s.n) || !s.known()) {
      return bad("want three positive dimensions MxKxN");
    }
    if (!absl::SimpleAtod(shape_rate[1], &rate) || !(rate > 0) || !std::isfinite(rate)) {
      return bad("want a rate > 0");
    }
    if (!rates.emplace(s, rate).second) return bad("shape given twice");
  }
  if (rates.empty()) return GemmGrid();
  std::vector<int64_t> m, k, n;
  for (const auto& [s, rate] : rates) {
    m.push_back(s.m);
    k.push_back(s.k);
    n.push_back(s.n);
  }
  for (auto* axis : {&m, &k, &n}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  std::vector<double> ordered;
  for (int64_t a : m) {
    for (int64_t b : k) {
      for (int64_t c : n) {
        auto it = rates.find(GemmShape{a, c, b});
        if (it == rates.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "gemm grid: no rate for ", a, "x", b, "x", c, " (every combination of the ",
              "dimensions given is needed)"));
        }
        ordered.push_back(it->second);
      }
    }
  }
  return GemmGrid::Make(std::move(m), std::move(k), std::move(n), std::move(ordered));
}

}  // namespace hpt
