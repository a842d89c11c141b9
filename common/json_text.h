// A string as a JSON string literal, for the few places that write JSON by
// hand (hptctl's sweep and trace files, the safetensors header): quotes,
// backslashes and control characters escaped; other bytes as they are
// (UTF-8 passes through).
//
//   out += JsonString(name) + ": " + JsonString(value);
#ifndef HPT_COMMON_JSON_TEXT_H_
#define HPT_COMMON_JSON_TEXT_H_

#include <string>

namespace hpt {

std::string JsonString(const std::string& text);

}  // namespace hpt

#endif  // HPT_COMMON_JSON_TEXT_H_
