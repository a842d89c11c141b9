// libFuzzer target: the AgWeatherNet loader. The input is split at the
// first NUL byte into two station files, so joins across stations are
// exercised too.
#include "data/real_data.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = hpt::AsText(data, size);
  const size_t cut = text.find('\0');
  std::vector<std::pair<std::string, std::string>> files = {
      {"AWN_60_1.csv", text.substr(0, cut)}};
  if (cut != std::string::npos) files.emplace_back("AWN_60_2.csv", text.substr(cut + 1));
  hpt::WeatherOptions options;
  options.limits = hpt::FuzzLimits();
  auto w = hpt::ParseAgWeather(files, options);
  if (w.ok() && (w->series.values.size() != size_t(w->series.rows * w->series.columns) ||
                 w->years.size() != size_t(w->series.rows))) {
    __builtin_trap();
  }
  return 0;
}
