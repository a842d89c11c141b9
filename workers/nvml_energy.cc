#include "workers/nvml_energy.h"

#include <dlfcn.h>


#include "absl/strings/str_cat.h"

namespace hpt {
namespace {

// NVML's C API, as nvml.h declares it (NVML API Reference, "Device
// Queries"): opaque device handles, int return codes with 0 for success.
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlApi {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*energy)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int) = nullptr;
  std::string error;
};

// Loaded once per process; the library stays open.
const NvmlApi& Api() {
  static const NvmlApi* api = [] {
    auto* a = new NvmlApi;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      a->error = "no NVIDIA driver library (libnvidia-ml.so.1)";
      return a;
    }
    a->init = reinterpret_cast<NvmlReturn (*)()>(dlsym(lib, "nvmlInit_v2"));
    a->by_uuid = reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(
        dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    a->by_index = reinterpret_cast<NvmlReturn (*)(unsigned int, NvmlDevice*)>(
        dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    a->energy = reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned long long*)>(
        dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    a->name = reinterpret_cast<NvmlReturn (*)(NvmlDevice, char*, unsigned int)>(
        dlsym(lib, "nvmlDeviceGetName"));
    if (!a->init || !a->by_uuid || !a->by_index || !a->energy || !a->name) {
      a->error = "libnvidia-ml.so.1 lacks the energy counter's functions";
    } else if (NvmlReturn r = a->init(); r != 0) {
      a->error = absl::StrCat("nvmlInit failed (NVML error ", r, ")");
    }
    return a;
  }();
  return *api;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NvmlEnergy>> NvmlEnergy::Open(const std::string& uuid, int index) {
  const NvmlApi& api = Api();
  if (!api.error.empty()) return absl::NotFoundError(api.error);
  NvmlDevice device = nullptr;
  const NvmlReturn r = uuid.empty() ? api.by_index(unsigned(index), &device)
                                    : api.by_uuid(uuid.c_str(), &device);
  if (r != 0) {
    return absl::NotFoundError(absl::StrCat("NVML has no GPU ",
                                            uuid.empty() ? absl::StrCat(index) : uuid,
                                            " (NVML error ", r, ")"));
  }
  unsigned long long mj = 0;
  if (NvmlReturn e = api.energy(device, &mj); e != 0) {
    return absl::NotFoundError(
        absl::StrCat("this GPU has no energy counter (NVML error ", e, ")"));
  }
  std::unique_ptr<NvmlEnergy> out(new NvmlEnergy);
  out->device_ = device;
  char name[96] = {};
  if (api.name(device, name, sizeof name) == 0) out->name_ = name;
  return out;
}

NvmlEnergy::~NvmlEnergy() = default;

double NvmlEnergy::TotalJ() const {
  unsigned long long mj = 0;
  if (Api().energy(device_, &mj) != 0) return -1;
  return double(mj) * 1e-3;
}

}  // namespace hpt
