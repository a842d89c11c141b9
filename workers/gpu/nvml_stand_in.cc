// A stand-in for the NVIDIA driver's NVML library, for the CPU twin of
// nvml_energy_test: one GPU behind the five functions NvmlEnergy opens,
// with the signatures and return codes nvml.h gives them. It checks this
// project's side of the contract (symbols, handles, codes, millijoules),
// never the driver; the real library is tested where a GPU is.
//
// Built four ways (BUILD): whole; with no energy counter; with an init
// that fails; and without the counter's function.
#include <cstring>

namespace {

// nvml.h's nvmlReturn_t values used here.
constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;
constexpr int kDriverNotLoaded = 9;

// The one GPU: its handle is the address of this object.
struct StandInGpu {
  const char* uuid = "GPU-5e7a0c1d-0000-4000-8000-000000000001";
  const char* name = "NVML stand-in GPU";
  unsigned long long energy_mj = 1000000;  // 1 kJ since the "driver" loaded
} gpu;

// Each read of the counter advances it by this much, so that a span
// between two reads has a known energy.
constexpr unsigned long long kMillijoulesPerRead = 250;

bool IsTheGpu(void* device) { return device == &gpu; }

}  // namespace

extern "C" {

int nvmlInit_v2() {
#ifdef STAND_IN_INIT_FAILS
  return kDriverNotLoaded;
#else
  return kSuccess;
#endif
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (device == nullptr) return kInvalidArgument;
  if (index != 0) return kInvalidArgument;  // the driver's answer past the count
  *device = &gpu;
  return kSuccess;
}

int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (uuid == nullptr || device == nullptr) return kInvalidArgument;
  if (std::strcmp(uuid, gpu.uuid) != 0) return kNotFound;
  *device = &gpu;
  return kSuccess;
}

#ifndef STAND_IN_NO_COUNTER_FUNCTION
int nvmlDeviceGetTotalEnergyConsumption(void* device, unsigned long long* energy) {
  if (!IsTheGpu(device) || energy == nullptr) return kInvalidArgument;
#ifdef STAND_IN_NO_COUNTER
  return kNotSupported;
#else
  gpu.energy_mj += kMillijoulesPerRead;
  *energy = gpu.energy_mj;
  return kSuccess;
#endif
}
#endif

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  if (!IsTheGpu(device) || name == nullptr) return kInvalidArgument;
  if (std::strlen(gpu.name) + 1 > length) return kInsufficientSize;
  std::strcpy(name, gpu.name);
  return kSuccess;
}

}  // extern "C"
