// Reads back device kinds that a job store, checkpoint or work record
// written before the kinds were an enum (proto/work.proto's DeviceKind)
// held as text. Those strings sit in field numbers the messages now
// reserve, so they parse as unknown fields; this moves each into the enum
// field that replaced it and drops the text.
//
//   Job job;
//   job.ParseFromArray(blob, size);
//   UpgradeStoredKinds(&job);  // job.spec().placement().head_device() == reram
#ifndef HPT_COMMON_STORED_KINDS_H_
#define HPT_COMMON_STORED_KINDS_H_

#include "google/protobuf/message.h"

namespace hpt {

// Walks `message` and every message inside it. A kind already set in the
// enum field wins; text that names no kind is dropped.
void UpgradeStoredKinds(google::protobuf::Message* message);

}  // namespace hpt

#endif  // HPT_COMMON_STORED_KINDS_H_
