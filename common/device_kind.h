// The kinds of worker a job runs on (proto/work.proto's DeviceKind): the
// one list of them, their names as flags, metrics labels and pages write
// them, and the one parse from text.
//
//   ASSIGN_OR_RETURN(DeviceKind::Name kind, ParseDeviceKind("--kind", "reram"));
//   labels["kind"] = KindName(kind);  // "reram"
#ifndef HPT_COMMON_DEVICE_KIND_H_
#define HPT_COMMON_DEVICE_KIND_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/work.pb.h"

namespace hpt {

// Every kind a worker can be, in the order pages and metrics list them.
inline constexpr DeviceKind::Name kDeviceKinds[] = {DeviceKind::gpu, DeviceKind::reram,
                                                    DeviceKind::systolic};

// "gpu", "reram", "systolic"; "" for DEVICE_KIND_UNSPECIFIED.
const std::string& KindName(DeviceKind::Name kind);

// `name` as a kind; INVALID_ARGUMENT naming `field` and the kinds allowed
// ("--kind 'tpu' is not gpu, reram or systolic").
absl::StatusOr<DeviceKind::Name> ParseDeviceKind(const std::string& field, const std::string& name);

// OK for a kind a worker can be; else INVALID_ARGUMENT listing them ("a
// worker needs a kind: gpu, reram or systolic").
absl::Status CheckWorkerKind(DeviceKind::Name kind);

}  // namespace hpt

#endif  // HPT_COMMON_DEVICE_KIND_H_
