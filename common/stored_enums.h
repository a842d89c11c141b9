// Reads back closed sets that a job store, checkpoint or work record
// written before they were enums held as text: device kinds
// (proto/work.proto's DeviceKind), GPU baselines (GpuBaseline), training
// phases (TrainingPhase; the phase controller's state held it as a number
// counted from 0) and cost phases (CostPhase; "lora-gpu" for lora_gpu).
// Those values sit in field numbers the messages now reserve, so they
// parse as unknown fields; this moves each into the enum field that
// replaced it and drops the old one.
//
//   Job job;
//   job.ParseFromArray(blob, size);
//   UpgradeStoredEnums(&job);  // job.spec().placement().head_device() == reram
#ifndef HPT_COMMON_STORED_ENUMS_H_
#define HPT_COMMON_STORED_ENUMS_H_

#include "google/protobuf/message.h"

namespace hpt {

// Walks `message` and every message inside it. A value already set in the
// enum field wins; text that names no value is dropped.
void UpgradeStoredEnums(google::protobuf::Message* message);

}  // namespace hpt

#endif  // HPT_COMMON_STORED_ENUMS_H_
