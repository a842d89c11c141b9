// libFuzzer target: the wide-CSV reader on arbitrary text.
#include "data/wide_csv.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (hpt::CsvHeader header :
       {hpt::CsvHeader::kAuto, hpt::CsvHeader::kPresent, hpt::CsvHeader::kAbsent}) {
    hpt::WideCsvOptions options;
    options.header = header;
    auto m = hpt::ParseWideCsv(hpt::AsText(data, size), "fuzz.csv", options);
    if (m.ok() && m->values.size() != size_t(m->rows * m->columns)) __builtin_trap();
  }
  return 0;
}
