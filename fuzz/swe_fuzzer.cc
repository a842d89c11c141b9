// libFuzzer target: the SNOTEL station table, then the synthetic SWE
// series built over whatever stations it accepted.
#include "data/swe.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto stations = hpt::ParseSnotelStations(hpt::AsText(data, size), "stations.csv");
  if (stations.ok() && !stations->empty() && stations->size() < 64) {
    hpt::SweOptions options;
    options.days = 730;
    hpt::TimeSeriesMatrix m = hpt::MakeSweSeries(*stations, options);
    for (float v : m.values) {
      if (!(v >= 0) || v != v) __builtin_trap();  // SWE is a non-negative depth
    }
  }
  return 0;
}
