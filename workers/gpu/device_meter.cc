#include "workers/gpu/device_meter.h"

#include <c10/core/Event.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <chrono>
#include <fstream>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "workers/gpu/nvml_energy.h"

namespace hpt {

struct DeviceMeter::Impl {
  torch::Device device{torch::kCPU};
  std::unique_ptr<NvmlEnergy> nvml;  // null: no counter
  std::chrono::steady_clock::time_point wall_start;
  // CUDA: c10's device-generic events (no cudart of our own, as in
  // cuda_timing.cc); BACKEND_DEFAULT keeps timing.
  std::optional<c10::Event> start, stop;
  double start_j = 0;
};

DeviceMeter::DeviceMeter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceMeter::~DeviceMeter() = default;

std::unique_ptr<DeviceMeter> DeviceMeter::Create(const std::string& device,
                                                 const std::string& uuid) {
  auto impl = std::make_unique<Impl>();
  impl->device = torch::Device(device);
  std::string by = "wall time", name = CpuModelName(), board;
  if (impl->device.is_cuda()) {
    by = "cuda events";
    const int index = impl->device.has_index() ? impl->device.index() : 0;
    name = device;
    // By the GPU's UUID where it has one: an index may name another board
    // (CUDA_VISIBLE_DEVICES renumbers CUDA's, not NVML's). A UUID NVML does
    // not know (a MIG slice) measures time only.
    auto nvml = NvmlEnergy::Open(uuid, index);
    if (nvml.ok() && !uuid.empty()) board = uuid;
    if (nvml.ok()) {
      impl->nvml = std::move(*nvml);
      name = impl->nvml->name();
    }
  }
  auto meter = std::unique_ptr<DeviceMeter>(new DeviceMeter(std::move(impl)));
  meter->measured_by_ = by;
  meter->device_name_ = name;
  meter->board_ = board;
  return meter;
}

bool DeviceMeter::measures_energy() const { return impl_->nvml != nullptr; }

void DeviceMeter::Start() {
  Impl& m = *impl_;
  if (m.nvml != nullptr) {
    torch::cuda::synchronize(m.device.index());  // earlier work is not this span's
    m.start_j = m.nvml->TotalJ();
  }
  if (m.device.is_cuda()) {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(m.device.index());
    m.start.emplace(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    m.stop.emplace(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
    m.start->record(stream);
  } else {
    m.wall_start = std::chrono::steady_clock::now();
  }
}

DeviceMeter::Reading DeviceMeter::Stop() {
  Impl& m = *impl_;
  Reading r;
  if (m.device.is_cuda() && m.start.has_value()) {
    m.stop->record(c10::cuda::getCurrentCUDAStream(m.device.index()));
    m.stop->synchronize();
    r.s = 1e-3 * m.start->elapsedTime(*m.stop);
    m.start.reset();
    m.stop.reset();
  } else {
    r.s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m.wall_start)
              .count();
  }
  if (m.nvml != nullptr) {
    const double now_j = m.nvml->TotalJ();
    if (now_j >= 0 && m.start_j >= 0) {
      r.j = now_j - m.start_j;
      r.counter_start_j = m.start_j;
      r.counter_end_j = now_j;
    }
  }
  return r;
}

void SetCounter(const std::string& board, const DeviceMeter::Reading& measured,
                CostReport* cost) {
  if (board.empty() || measured.counter_end_j <= measured.counter_start_j) return;
  cost->set_board(board);
  cost->set_counter_start_j(measured.counter_start_j);
  cost->set_counter_end_j(measured.counter_end_j);
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return "cpu";
}

}  // namespace hpt
