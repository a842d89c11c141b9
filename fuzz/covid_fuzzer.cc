// libFuzzer target: the COVID-19 county table loader, both county modes.
#include "data/real_data.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool all : {false, true}) {
    hpt::CovidOptions options;
    options.all_counties = all;
    options.counties = 3;
    options.limits = hpt::FuzzLimits();
    auto c = hpt::ParseCovidCsv(hpt::AsText(data, size), "covid.csv", options);
    if (c.ok() && c->series.values.size() != size_t(c->series.rows * c->series.columns)) {
      __builtin_trap();
    }
  }
  return 0;
}
