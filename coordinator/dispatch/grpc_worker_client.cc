#include "coordinator/dispatch/grpc_worker_client.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/grpc_setup.h"
#include "common/grpc_status.h"

namespace hpt {
namespace {

void SetDeadline(grpc::ClientContext* context, absl::Duration deadline) {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(deadline));
}

absl::Status Annotate(const absl::Status& status, const char* method,
                      const std::string& address) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("worker ", address, " ",
                                                  method, ": ", status.message()));
}

}  // namespace

GrpcWorkerClient::GrpcWorkerClient(std::string address, Options options)
    : address_(std::move(address)),
      options_(std::move(options)),
      stub_(WorkerService::NewStub(MakeChannel(address_, options_.tls))) {}

absl::Status GrpcWorkerClient::Begin(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (aborted_.ok()) in_flight_.insert(context);
  return aborted_;
}

bool GrpcWorkerClient::End(grpc::ClientContext* context, const std::string& method,
                           absl::Duration took, absl::Status* status) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(context);
  absl::Duration& slowest = slowest_[method];
  slowest = std::max(slowest, took);
  // An aborted call ends with the abort's reason, not gRPC's CANCELLED.
  if (aborted_.ok()) return false;
  *status = aborted_;
  return true;
}

void GrpcWorkerClient::Abort(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  if (aborted_.ok()) aborted_ = reason;
  for (grpc::ClientContext* context : in_flight_) context->TryCancel();
}

absl::Duration GrpcWorkerClient::TaskDeadline(const std::string& method) const {
  absl::MutexLock lock(&mu_);
  auto it = slowest_.find(method);
  if (it == slowest_.end()) return options_.task_deadline;
  return std::clamp(it->second * kDeadlineFactor, options_.min_task_deadline,
                    options_.task_deadline);
}

template <typename Request, typename Response, typename Method>
absl::Status GrpcWorkerClient::CallWithRetry(const char* name, Method method,
                                             const Request& request,
                                             Response* response,
                                             absl::Duration deadline, bool abortable) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status status;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    grpc::ClientContext context;
    SetDeadline(&context, deadline);
    const auto call_start = std::chrono::steady_clock::now();
    if (abortable) {
      status = Begin(&context);
      if (!status.ok()) break;
    }
    status = FromGrpcStatus((stub_.get()->*method)(&context, request, response));
    if (abortable &&
        End(&context, name, absl::FromChrono(std::chrono::steady_clock::now() - call_start),
            &status)) {
      break;
    }
    if (status.code() != absl::StatusCode::kUnavailable) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
  }
  if (options_.on_rpc) {
    options_.on_rpc(name, absl::StatusCodeToString(status.code()),
                    std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  return Annotate(status, name, address_);
}

absl::StatusOr<LoadParametersResponse> GrpcWorkerClient::LoadParameters(
    const LoadParametersHeader& header, const std::vector<TensorChunk>& chunks) {
  const auto start = std::chrono::steady_clock::now();
  grpc::ClientContext context;
  SetDeadline(&context, options_.load_deadline);
  LoadParametersResponse response;
  if (absl::Status aborted = Begin(&context); !aborted.ok()) return aborted;
  auto writer = stub_->LoadParameters(&context, &response);
  LoadParametersRequest request;
  *request.mutable_header() = header;
  bool ok = writer->Write(request);
  for (size_t i = 0; ok && i < chunks.size(); ++i) {
    *request.mutable_chunk() = chunks[i];
    ok = writer->Write(request);
  }
  writer->WritesDone();
  absl::Status status = FromGrpcStatus(writer->Finish());
  End(&context, "load", absl::FromChrono(std::chrono::steady_clock::now() - start), &status);
  if (options_.on_rpc) {
    options_.on_rpc("load", absl::StatusCodeToString(status.code()),
                    std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  if (!status.ok()) return Annotate(status, "LoadParameters", address_);
  return response;
}

absl::StatusOr<TrainRunResponse> GrpcWorkerClient::TrainRun(const TrainRunRequest& request) {
  TrainRunResponse response;
  const int64_t steps = std::max<int64_t>(1, request.steps_size());
  absl::Status s = CallWithRetry("train_run", &WorkerService::Stub::TrainRun, request, &response,
                                 options_.task_deadline * steps);
  if (!s.ok()) return s;
  return response;
}

absl::Status GrpcWorkerClient::JoinGroup(const JoinGroupRequest& request) {
  JoinGroupResponse response;
  return CallWithRetry("join_group", &WorkerService::Stub::JoinGroup, request,
                       &response, options_.load_deadline);
}

absl::StatusOr<ForwardResponse> GrpcWorkerClient::Forward(
    const ForwardRequest& request) {
  ForwardResponse response;
  absl::Status s = CallWithRetry("forward", &WorkerService::Stub::Forward,
                                 request, &response, TaskDeadline("forward"));
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<BackwardResponse> GrpcWorkerClient::Backward(
    const BackwardRequest& request) {
  BackwardResponse response;
  absl::Status s = CallWithRetry("backward", &WorkerService::Stub::Backward,
                                 request, &response, TaskDeadline("backward"));
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<ApplyUpdateResponse> GrpcWorkerClient::ApplyUpdate(
    const ApplyUpdateRequest& request) {
  ApplyUpdateResponse response;
  absl::Status s = CallWithRetry("update", &WorkerService::Stub::ApplyUpdate,
                                 request, &response, TaskDeadline("update"));
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<std::vector<TensorChunk>> GrpcWorkerClient::Snapshot(
    const std::string& job_id, const std::vector<std::string>& names,
    bool optimizer_state) {
  grpc::ClientContext context;
  SetDeadline(&context, options_.load_deadline);
  SnapshotRequest request;
  request.set_job_id(job_id);
  for (const std::string& name : names) request.add_names(name);
  request.set_optimizer_state(optimizer_state);
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status aborted = Begin(&context); !aborted.ok()) return aborted;
  auto reader = stub_->Snapshot(&context, request);
  std::vector<TensorChunk> chunks;
  TensorChunk chunk;
  while (reader->Read(&chunk)) chunks.push_back(chunk);
  absl::Status status = FromGrpcStatus(reader->Finish());
  End(&context, "snapshot", absl::FromChrono(std::chrono::steady_clock::now() - start),
      &status);
  if (!status.ok()) return Annotate(status, "Snapshot", address_);
  return chunks;
}

absl::Status GrpcWorkerClient::Release(const std::string& job_id) {
  ReleaseRequest request;
  request.set_job_id(job_id);
  ReleaseResponse response;
  {
    // A worker that stopped answering will not free the job's memory now,
    // nor will one whose step was abandoned (it may sit in a collective
    // until its timeout): the next load of the job replaces it.
    absl::MutexLock lock(&mu_);
    if (absl::IsUnavailable(aborted_) || absl::IsAborted(aborted_)) return aborted_;
  }
  // After a cancel the job's model is still freed.
  return CallWithRetry("release", &WorkerService::Stub::Release, request, &response,
                       absl::Seconds(10), /*abortable=*/false);
}

absl::StatusOr<ProbeBaselinesResponse> GrpcWorkerClient::ProbeBaselines(
    const ProbeBaselinesRequest& request) {
  ProbeBaselinesResponse response;
  // A probe of four baselines takes several times a step's tasks: it gets
  // the longest a task may take.
  absl::Status s = CallWithRetry("probe", &WorkerService::Stub::ProbeBaselines, request,
                                 &response, options_.task_deadline);
  if (!s.ok()) return s;
  return response;
}

}  // namespace hpt
