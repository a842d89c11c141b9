#include "data/data_units.h"

#include "absl/strings/str_cat.h"

namespace hpt {
namespace {

// Applies `f(value, mean, sd)` to every value, by its token.
template <typename F>
absl::Status PerToken(const DataUnits& units, HostTensor* t, F f) {
  const size_t dims = t->shape.size();
  if (dims < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input is ", t->ShapeString(), "; it must be [tokens, features] or [samples, tokens, "
        "features]"));
  }
  const int64_t tokens = t->shape[dims - 2], features = t->shape[dims - 1];
  if (tokens != units.mean_size() || units.sd_size() != units.mean_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input has ", tokens, " tokens; the model's data has ", units.mean_size(),
        " stations, one token each"));
  }
  const int64_t per_sample = tokens * features;
  for (size_t i = 0; i < t->data.size(); ++i) {
    const int64_t token = int64_t(i % size_t(per_sample)) / features;
    t->data[i] = f(t->data[i], units.mean(int(token)), units.sd(int(token)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ToModelUnits(const DataUnits& units, HostTensor* t) {
  return PerToken(units, t, [](float v, float mean, float sd) { return (v - mean) / sd; });
}

absl::Status ToDataUnits(const DataUnits& units, HostTensor* t) {
  return PerToken(units, t, [](float v, float mean, float sd) { return v * sd + mean; });
}

std::string TakeCommonUnit(std::vector<std::string>* names) {
  std::string unit;
  std::vector<std::string> stripped;
  for (const std::string& name : *names) {
    const size_t end = name.find_last_not_of(' ');
    if (end == std::string::npos) return "";
    const char close = name[end];
    const char open = close == ')' ? '(' : close == ']' ? '[' : 0;
    const size_t start = open ? name.rfind(open, end) : std::string::npos;
    if (start == std::string::npos || start == 0 || start + 1 >= end) return "";
    const std::string u = name.substr(start + 1, end - start - 1);
    if (!unit.empty() && u != unit) return "";
    unit = u;
    const size_t last = name.find_last_not_of(' ', start - 1);
    stripped.push_back(last == std::string::npos ? "" : name.substr(0, last + 1));
  }
  if (!unit.empty()) *names = std::move(stripped);
  return unit;
}

}  // namespace hpt
