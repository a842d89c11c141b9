// hptctl's commands on a job's trained model:
//
//   export JOB --out model.pt   model.pt (TorchScript, with its forward),
//                               model.safetensors and model.json (its config)
//   predict JOB --input x.npy [--out y.npy]
//                               the service's prediction (JobService.Predict)
#ifndef HPT_HPTCTL_MODEL_COMMANDS_H_
#define HPT_HPTCTL_MODEL_COMMANDS_H_

#include <functional>
#include <string>

#include "grpcpp/grpcpp.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {

struct ModelCommandOptions {
  // Prepares a call's context: the token only (a stream that may be long),
  // or the token and the deadline.
  std::function<void(grpc::ClientContext*)> authorize, prepare;
  bool json = false;
  std::string out;    // --out
  std::string input;  // --input
  bool normalised = false;  // --normalised: predict in the model's units
};

int ExportCommand(JobService::Stub& stub, const std::string& job_id,
                  const ModelCommandOptions& options);
int PredictCommand(JobService::Stub& stub, const std::string& job_id,
                   const ModelCommandOptions& options);

// FILE.pt -> FILE.safetensors, FILE.json (beside it, the same stem).
std::string SiblingPath(const std::string& model_path, const std::string& extension);

}  // namespace hpt

#endif  // HPT_HPTCTL_MODEL_COMMANDS_H_
