// libFuzzer target: job-spec validation, from text format (what hptctl
// --spec sends) and from wire bytes (what any gRPC client may send), then
// the model it resolves to.
#include "coordinator/spec/job_spec.h"
#include "fuzz/fuzz_util.h"
#include "google/protobuf/stubs/logging.h"

namespace {

void Check(const hpt::JobSpec& spec) {
  absl::StatusOr<hpt::JobSpec> normal = hpt::NormalizeJobSpec(spec);
  if (!normal.ok()) return;
  // Normalising is idempotent: a normalised spec passes again unchanged.
  absl::StatusOr<hpt::JobSpec> again = hpt::NormalizeJobSpec(*normal);
  if (!again.ok() || again->SerializeAsString() != normal->SerializeAsString()) {
    __builtin_trap();
  }
  (void)hpt::ResolveModelConfig(normal->model(), 12, 1);
}

}  // namespace

// Invalid UTF-8 in string fields is an expected parse failure; protobuf's
// log line for each would drown the fuzzer's output.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = hpt::AsText(data, size);
  absl::StatusOr<hpt::JobSpec> parsed = hpt::ParseJobSpecText(text);
  if (parsed.ok()) Check(*parsed);
  hpt::JobSpec wire;
  if (wire.ParseFromString(text)) Check(wire);
  return 0;
}
