#include "workers/gpu/nvml_energy.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

namespace hpt {

// NVML's C API, as nvml.h declares it (NVML API Reference, "Device
// Queries"): opaque device handles, int return codes with 0 for success.
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlEnergy::Api {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*energy)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int) = nullptr;
  std::string error;  // empty: loaded and initialised
};

namespace {

template <typename F>
void Find(void* lib, const char* symbol, F* f) {
  *f = reinterpret_cast<F>(dlsym(lib, symbol));
}

std::unique_ptr<NvmlEnergy::Api> Load(const std::string& library) {
  auto a = std::make_unique<NvmlEnergy::Api>();
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    a->error = absl::StrCat("no NVIDIA driver library (", library, ")");
    return a;
  }
  Find(lib, "nvmlInit_v2", &a->init);
  Find(lib, "nvmlDeviceGetHandleByUUID", &a->by_uuid);
  Find(lib, "nvmlDeviceGetHandleByIndex_v2", &a->by_index);
  Find(lib, "nvmlDeviceGetTotalEnergyConsumption", &a->energy);
  Find(lib, "nvmlDeviceGetName", &a->name);
  if (!a->init || !a->by_uuid || !a->by_index || !a->energy || !a->name) {
    a->error = absl::StrCat(library, " lacks the energy counter's functions");
  } else if (NvmlReturn r = a->init(); r != 0) {
    a->error = absl::StrCat("nvmlInit failed (NVML error ", NvmlErrorText(r), ")");
  }
  return a;
}

// Each library is loaded once per process and stays open.
const NvmlEnergy::Api& ApiOf(const std::string& library) {
  static std::mutex mu;
  static auto* apis = new std::map<std::string, std::unique_ptr<NvmlEnergy::Api>>;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<NvmlEnergy::Api>& api = (*apis)[library];
  if (api == nullptr) api = Load(library);
  return *api;
}

}  // namespace

std::string NvmlErrorText(int code) {
  // nvml.h's nvmlReturn_t, the codes a query can give.
  static const std::map<int, const char*> names = {
      {1, "uninitialized"},       {2, "invalid argument"}, {3, "not supported"},
      {4, "no permission"},       {6, "not found"},        {7, "insufficient size"},
      {9, "driver not loaded"},   {12, "library not found"}, {13, "function not found"},
      {15, "GPU is lost"},        {999, "unknown"}};
  auto it = names.find(code);
  return it == names.end() ? absl::StrCat(code) : absl::StrCat(code, ", ", it->second);
}

absl::StatusOr<std::unique_ptr<NvmlEnergy>> NvmlEnergy::Open(const std::string& uuid, int index,
                                                             const std::string& library) {
  const Api& api = ApiOf(library);
  if (!api.error.empty()) return absl::NotFoundError(api.error);
  NvmlDevice device = nullptr;
  const NvmlReturn r = uuid.empty() ? api.by_index(unsigned(index), &device)
                                    : api.by_uuid(uuid.c_str(), &device);
  if (r != 0) {
    return absl::NotFoundError(absl::StrCat("NVML has no GPU ",
                                            uuid.empty() ? absl::StrCat(index) : uuid,
                                            " (NVML error ", NvmlErrorText(r), ")"));
  }
  unsigned long long mj = 0;
  if (NvmlReturn e = api.energy(device, &mj); e != 0) {
    return absl::NotFoundError(
        absl::StrCat("this GPU has no energy counter (NVML error ", NvmlErrorText(e), ")"));
  }
  std::unique_ptr<NvmlEnergy> out(new NvmlEnergy);
  out->api_ = &api;
  out->device_ = device;
  char name[96] = {};
  if (api.name(device, name, sizeof name) == 0) out->name_ = name;
  return out;
}

NvmlEnergy::~NvmlEnergy() = default;

double NvmlEnergy::TotalJ() const {
  unsigned long long mj = 0;
  if (api_->energy(device_, &mj) != 0) return -1;
  return double(mj) * 1e-3;
}

}  // namespace hpt
