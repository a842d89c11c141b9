// Shared by the fuzz targets: the input as a string, and limits small
// enough that a fuzzer's grid cannot take the machine's memory.
#ifndef HPT_FUZZ_FUZZ_UTIL_H_
#define HPT_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/text_file.h"

namespace hpt {

inline std::string AsText(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// 100 k cells (400 kB of floats): the loaders must refuse anything larger
// before allocating it, so ASan's RSS limit never trips on a valid refusal.
inline DataLimits FuzzLimits() {
  DataLimits limits;
  limits.max_cells = 100'000;
  return limits;
}

}  // namespace hpt

#endif  // HPT_FUZZ_FUZZ_UTIL_H_
