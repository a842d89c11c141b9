#include "common/host_memory.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hpt {

std::optional<double> ParseMemAvailable(absl::string_view meminfo) {
  // "MemAvailable:   12345678 kB"
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return std::nullopt;
    double kib = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(line), &kib) || kib < 0) return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

std::optional<double> AvailableMemoryBytes() {
  std::ifstream file("/proc/meminfo");
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return ParseMemAvailable(text.str());
}

}  // namespace hpt
