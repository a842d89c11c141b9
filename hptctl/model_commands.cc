#include "hptctl/model_commands.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/output_file.h"
#include "common/tensor_codec.h"
#include "hptctl/job_format.h"
#include "hptctl/npy_file.h"
#include "hptctl/request_text.h"
#include "hptctl/safetensors_file.h"
#include "hptctl/unary_call.h"
#include "models/model_config.h"

namespace hpt {
namespace {

int Fail(const absl::Status& status) { return PrintFailure(status); }

int UsageError(const std::string& message) {
  std::cerr << "hptctl: " << message << std::endl;
  return kExitUsage;
}

}  // namespace

std::string SiblingPath(const std::string& model_path, const std::string& extension) {
  const size_t slash = model_path.rfind('/');
  const size_t dot = model_path.rfind('.');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (has_extension ? model_path.substr(0, dot) : model_path) + extension;
}

int ExportCommand(JobService::Stub& stub, const std::string& job_id,
                  const ModelCommandOptions& options) {
  const std::string& out = options.out;
  if (job_id.empty() || out.empty()) {
    return UsageError("export needs a job id and --out, e.g. hptctl export job-000001 --out model.pt");
  }
  // The weights and the config are written beside --out under its stem.
  for (const char* sibling : {".safetensors", ".json"}) {
    if (SiblingPath(out, sibling) == out) {
      return UsageError(absl::StrCat(
          "--out names the TorchScript file, and ", out, " is where its ", sibling,
          " sibling goes: give --out model.pt, and model", sibling, " is written beside it"));
    }
  }
  // A folder that is missing or not writable is said before the download.
  if (absl::Status s = CheckOutputPath(out); !s.ok()) return Fail(s);
  grpc::ClientContext context;  // a large model may take a while: no deadline
  options.authorize(&context);
  ExportModelRequest request;
  request.set_job_id(job_id);
  if (absl::Status s = CheckRequestText(request); !s.ok()) return Fail(s);
  auto reader = stub.ExportModel(&context, request);
  ExportModelChunk message;
  ModelConfig config;
  DataUnits units;
  ChunkAssembler assembler;
  std::string script;  // FILE.pt, written by the coordinator's LibTorch
  while (reader->Read(&message)) {
    if (message.has_model()) config = message.model();
    if (message.has_data_units()) units = message.data_units();
    if (message.has_torchscript()) script += message.torchscript();
    if (message.has_chunk()) {
      absl::Status added = assembler.Add(message.chunk());
      if (!added.ok()) return Fail(added);
    }
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (!s.ok()) return Fail(s);
  absl::StatusOr<std::map<std::string, HostTensor>> params = assembler.Finish();
  if (!params.ok()) return Fail(params.status());
  if (script.empty()) {
    return Fail(absl::UnavailableError(
        "the coordinator sent no TorchScript model: it predates hptctl; upgrade the coordinator"));
  }
  s = WriteOutputFile(out, script);
  if (!s.ok()) return Fail(s);
  const std::string config_json = ToJson(config);
  // model.json: the ModelConfig's fields, and the data's units beside them.
  const std::string model_json =
      units.mean_size() > 0 ? "{\"data_units\": " + ToJson(units) + ", " + config_json.substr(1)
                            : config_json;
  const std::string weights = SiblingPath(out, ".safetensors"), config_path = SiblingPath(out, ".json");
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"hpt_model_config", config_json}, {"hpt_job", job_id}};
  if (units.mean_size() > 0) metadata["hpt_data_units"] = ToJson(units);
  std::map<std::string, HostTensor> tensors = *params;
  if (UsesDataUnits(units)) {
    // The module's buffers too, so the file loads into it whole.
    for (const auto& [name, values] : {std::pair{"data_mean", &units.mean()},
                                       std::pair{"data_sd", &units.sd()}}) {
      HostTensor t({int64_t(values->size())});
      std::copy(values->begin(), values->end(), t.data.begin());
      tensors[name] = std::move(t);
    }
  }
  s = WriteSafetensors(tensors, metadata, weights);
  if (s.ok()) s = WriteOutputFile(config_path, model_json + "\n");
  if (!s.ok()) return Fail(s);
  if (options.json) {
    std::cout << model_json << std::endl;
    return kExitOk;
  }
  std::cout << "wrote " << out << " (TorchScript with its forward, " << params->size()
            << " tensors, LoRA merged), " << weights << " and " << config_path
            << " (its ModelConfig" << (units.mean_size() > 0 ? " and the data's units" : "")
            << ")\nin Python:\n"
            << "  import torch\n  m = torch.jit.load(\"" << out << "\")\n";
  if (UsesDataUnits(units)) {
    std::cout << "  y = m(x)  # x: [samples, " << units.mean_size() << " stations, "
              << config.input_features()
              << " steps], float32, in the data's units; y: the next value, same units\n"
              << "  z = m.forward_normalised(x_z)  # the same on z-scored values\n";
  } else {
    std::cout << "  y = m(x)  # x: [samples, tokens, " << config.input_features()
              << " features], float32, normalised as in training\n";
  }
  return kExitOk;
}

int PredictCommand(JobService::Stub& stub, const std::string& job_id,
                   const ModelCommandOptions& options) {
  if (job_id.empty() || options.input.empty()) {
    return UsageError(
        "predict needs a job id and --input, e.g. hptctl predict job-000001 --input x.npy --out y.npy");
  }
  if (!options.out.empty() && !absl::EndsWithIgnoreCase(options.out, ".npy")) {
    return UsageError(absl::StrCat("--out ", options.out,
                                   ": predict writes a NumPy .npy file; name it so (--out y.npy), "
                                   "or leave --out off to print the values, one per line"));
  }
  if (!options.out.empty()) {
    if (absl::Status s = CheckOutputPath(options.out); !s.ok()) return Fail(s);
  }
  absl::StatusOr<HostTensor> input = ReadNpy(options.input);
  if (!input.ok()) return Fail(absl::Status(input.status().code(), absl::StrCat("--input ", input.status().message())));
  PredictRequest request;
  request.set_job_id(job_id);
  request.set_normalised(options.normalised);
  ToProto(std::move(*input), "input", request.mutable_input());
  PredictResponse response;
  absl::Status s =
      UnaryCall(stub, &JobService::Stub::Predict, request, &response, options.prepare);
  if (!s.ok()) return Fail(s);
  absl::StatusOr<HostTensor> output = FromProto(response.output(), "PredictResponse.output");
  if (!output.ok()) return Fail(output.status());
  if (!options.out.empty()) {
    s = WriteNpy(*output, options.out);
    if (!s.ok()) return Fail(s);
  }
  if (options.json) {
    std::cout << ToJson(response) << std::endl;
  } else if (options.out.empty()) {
    for (size_t i = 0; i < output->data.size(); ++i) std::cout << output->data[i] << "\n";
  } else {
    std::cout << "wrote " << options.out << ": " << output->ShapeString() << std::endl;
  }
  return kExitOk;
}

}  // namespace hpt
