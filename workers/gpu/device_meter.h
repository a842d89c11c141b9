// DeviceMeter: how long a piece of work took on a worker's device, and
// the energy the board drew meanwhile. On CUDA: events on the device's
// current stream around the work, and the driver's energy counter
// (workers/gpu/nvml_energy.h) where it has one. On the CPU: wall time, and
// no energy. CUDA stays out of this header.
//
//   std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cuda:0", uuid);
//   meter->Start();  ... the task ...
//   DeviceMeter::Reading r = meter->Stop();  // synchronises the device
//
// Not thread-safe: one span at a time (the GPU executor's tasks hold its
// lock).
#ifndef HPT_WORKERS_DEVICE_METER_H_
#define HPT_WORKERS_DEVICE_METER_H_

#include <memory>
#include <string>

#include "proto/common.pb.h"

namespace hpt {

class DeviceMeter {
 public:
  struct Reading {
    double s = 0;  // seconds
    double j = 0;  // joules; 0: not measured
    // The board's counter at the span's start and end, joules since the
    // driver loaded; both 0 where energy is not measured.
    double counter_start_j = 0, counter_end_j = 0;
  };
  // `device`: "cpu" or "cuda:N" (a device LibTorch accepts); `uuid`: the
  // GPU's, for its energy counter (empty: by index; one NVML does not know:
  // no counter). Never fails: a GPU without a counter measures time only.
  static std::unique_ptr<DeviceMeter> Create(const std::string& device,
                                             const std::string& uuid = "");
  ~DeviceMeter();

  void Start();
  Reading Stop();

  // "cuda events" or "wall time".
  const std::string& measured_by() const { return measured_by_; }
  // As the driver names the GPU, or the CPU's model name.
  const std::string& device_name() const { return device_name_; }
  bool measures_energy() const;
  // The board whose counter it reads, by UUID; empty where it reads none,
  // or opened it by index (another process's index may be another board).
  const std::string& board() const { return board_; }

 private:
  struct Impl;
  explicit DeviceMeter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string measured_by_, device_name_, board_;
};

// `measured`'s counter readings and `board` into `cost`, where the span
// read a counter on a board known by UUID: what lets the record count a
// board shared by several workers once.
void SetCounter(const std::string& board, const DeviceMeter::Reading& measured,
                CostReport* cost);

// The CPU's model name from /proc/cpuinfo ("cpu" where it is not there).
std::string CpuModelName();

}  // namespace hpt

#endif  // HPT_WORKERS_DEVICE_METER_H_
