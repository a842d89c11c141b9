// The GPU board's energy counter, read through NVML
// (nvmlDeviceGetTotalEnergyConsumption: millijoules since the driver
// loaded; Volta and later). The library is the driver's own
// libnvidia-ml.so.1, opened with dlopen when first asked for, so the build
// needs no NVML headers and a machine without a driver simply has no
// counter.
//
//   std::unique_ptr<NvmlEnergy> nvml = NvmlEnergy::Open(uuid);  // null: none
//   double before = nvml->TotalJ();  ... work, synchronised ...
//   double used_j = nvml->TotalJ() - before;
#ifndef HPT_WORKERS_NVML_ENERGY_H_
#define HPT_WORKERS_NVML_ENERGY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace hpt {

// The driver's library, as the loader finds it.
inline constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";

class NvmlEnergy {
 public:
  // The counter of the GPU with this UUID ("GPU-..."), or of device index
  // `index` when `uuid` is empty. NOT_FOUND with the reason where there is
  // no driver library, no such GPU or no counter on it. `library`: another
  // copy of NVML, by path (each is loaded once per process and stays).
  static absl::StatusOr<std::unique_ptr<NvmlEnergy>> Open(const std::string& uuid,
                                                          int index = 0,
                                                          const std::string& library = kNvmlLibrary);
  ~NvmlEnergy();
  // Joules since the driver loaded; -1 when a read fails.
  double TotalJ() const;
  const std::string& name() const { return name_; }  // as the driver names the GPU

  struct Api;  // the library's functions (nvml_energy.cc)

 private:
  NvmlEnergy() = default;
  const Api* api_ = nullptr;
  void* device_ = nullptr;
  std::string name_;
};

// NVML's return code with its name from nvml.h ("3, not supported"), or
// the number alone where it has none here.
std::string NvmlErrorText(int code);

}  // namespace hpt

#endif  // HPT_WORKERS_NVML_ENERGY_H_
