// libFuzzer target: GPU profiles (devices/gpu/roofline.h), inline as
// `--set reference_gpu=...` gives them and from a file as
// ReferenceGpuValue reads one.
//
// A profile that parses prints as text that parses to the same text, and
// a file's error is a line about the file: it never quotes the file.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "devices/gpu/roofline.h"
#include "fuzz/fuzz_util.h"

namespace {

void CheckRoundTrip(const hpt::GpuSpec& gpu) {
  const std::string text = hpt::GpuProfileText(gpu);
  absl::StatusOr<hpt::GpuSpec> again = hpt::ParseGpuProfile(text);
  if (!again.ok() || hpt::GpuProfileText(*again) != text) __builtin_trap();
}

// One scratch file for the whole run, rewritten for each input.
const std::string& ScratchPath() {
  static const std::string path = [] {
    char dir[] = "/tmp/hpt_gpu_profile_fuzz_XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    return std::string(dir) + "/fuzz.profile";
  }();
  return path;
}

void CheckFile(const std::string& text) {
  const std::string& path = ScratchPath();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  absl::StatusOr<std::string> value = hpt::ReferenceGpuValue(path);
  if (!value.ok()) {
    // One line naming the path and, at most, a key and numbers the parser
    // formatted: never the file's text. The longest such message, a rate
    // above the fp32 peak, runs about 400 characters past the path; a file
    // quoted back could run to kMaxGpuProfileBytes.
    const absl::string_view message = value.status().message();
    if (message.size() > path.size() + 512 || message.find('\n') != absl::string_view::npos) {
      __builtin_trap();
    }
    return;
  }
  // What travels on is one line that parses as the same profile.
  if (value->find('\n') != std::string::npos) __builtin_trap();
  absl::StatusOr<hpt::GpuSpec> parsed = hpt::GpuProfileOrPreset(*value);
  if (!parsed.ok()) __builtin_trap();
  CheckRoundTrip(*parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = hpt::AsText(data, size);
  if (absl::StatusOr<hpt::GpuSpec> inline_gpu = hpt::ParseGpuProfile(text); inline_gpu.ok()) {
    CheckRoundTrip(*inline_gpu);
  }
  CheckFile(text);
  return 0;
}
