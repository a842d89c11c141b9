// hpt_calibrate: measures the cost profile of the device LibTorch runs on
// (workers/calibrate/device_calibration.h) and writes it as a profile file that
// GPU workers (--reference_gpu=FILE), hptctl whatif (--set
// reference_gpu=FILE) and gpu_model_check read.
//
//   hpt_calibrate --device=cuda:0 --out=my-gpu.profile
//   hpt_calibrate --device=cpu --quick            (prints the profile)
// Exit codes: 0 written, 2 bad flags or device, 3 a measurement failed.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/process_setup.h"
#include "devices/gpu/roofline.h"
#include "workers/calibrate/device_calibration.h"

ABSL_FLAG(std::string, device, "cpu", "Device to measure: cpu, cuda or cuda:N.");
ABSL_FLAG(std::string, out, "", "Profile file to write (empty: standard output).");
ABSL_FLAG(std::string, name, "", "The profile's name (default: the device's own).");
ABSL_FLAG(bool, quick, false, "Fewer sizes, shorter loops: seconds instead of about a minute.");
ABSL_FLAG(double, power_window_s, 2, "Seconds each power reading averages over (CUDA).");

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::SetProgramUsageMessage(
      "Measures this device's cost profile (dispatch per op, GEMM rates by size, memory "
      "bandwidth; on CUDA also graph nodes and board power) and writes it for "
      "reference_gpu=FILE.\n  hpt_calibrate --device=cuda:0 --out=my-gpu.profile");
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();  // as a worker's heap
  hpt::CalibrationOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  options.quick = absl::GetFlag(FLAGS_quick);
  options.power_window_s = absl::GetFlag(FLAGS_power_window_s);
  options.progress = [](const std::string& line) { std::cerr << "  " << line << std::endl; };
  std::cerr << "hpt_calibrate: measuring " << options.device << std::endl;
  absl::StatusOr<hpt::GpuSpec> profile = hpt::CalibrateDevice(options);
  if (!profile.ok()) {
    std::cerr << "hpt_calibrate: " << profile.status().message() << std::endl;
    return profile.status().code() == absl::StatusCode::kInvalidArgument ||
                   profile.status().code() == absl::StatusCode::kFailedPrecondition
               ? 2
               : 3;
  }
  if (!absl::GetFlag(FLAGS_name).empty()) profile->name = absl::GetFlag(FLAGS_name);
  const std::string text = "# hpt_calibrate profile (docs/cost-model.md, \"GPU profiles\")\n" +
                           hpt::GpuProfileText(*profile);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream file(out);
  file << text;
  if (!file.flush()) {
    std::cerr << "hpt_calibrate: cannot write " << out << std::endl;
    return 2;
  }
  std::cerr << "hpt_calibrate: wrote " << out << std::endl;
  return 0;
}
