#include "workers/worker_service.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/metrics.h"
#include "common/peer_role.h"
#include "common/tensor_codec.h"

namespace hpt {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(DeviceKind::Name kind, TaskExecutor* executor,
                                     WorkerMetrics* metrics, TlsCredentials tls)
    : kind_(kind),
      executor_(executor),
      metrics_(metrics),
      device_queue_("device"),
      tls_(std::move(tls)) {}

WorkerServiceImpl::~WorkerServiceImpl() = default;

void WorkerServiceImpl::Observe(const char* task, double seconds,
                                const absl::Status& status) {
  if (metrics_ == nullptr) return;
  metrics_->ObserveTask(task, seconds, absl::StatusCodeToString(status.code()));
  metrics_->jobs_resident.Set(static_cast<double>(executor_->Jobs().size()));
}

void WorkerServiceImpl::ObserveCost(const CostReport& cost) {
  if (metrics_ != nullptr) metrics_->ObserveCost(cost);
}

absl::Status WorkerServiceImpl::CheckCaller(const grpc::CallbackServerContext& context) const {
  static constexpr PeerRole kCoordinatorOnly[] = {PeerRole::kCoordinator};
  return CheckPeerRole(context, tls_, kCoordinatorOnly, "WorkerService");
}

template <typename Task>
grpc::ServerUnaryReactor* WorkerServiceImpl::RunOnDevice(
    grpc::CallbackServerContext* context, const char* name, Task task) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status refused = CheckCaller(*context); !refused.ok()) {
    reactor->Finish(ToGrpcStatus(refused));
    return reactor;
  }
  device_queue_.Post([this, reactor, name, task = std::move(task)]() mutable {
    const auto start = std::chrono::steady_clock::now();
    absl::Status status = task();
    Observe(name, SecondsSince(start), status);
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

// Client stream: a header, then parameter chunks. Decoding happens on gRPC's
// thread as chunks arrive; the model is built on the device queue.
class WorkerServiceImpl::LoadReactor
    : public grpc::ServerReadReactor<LoadParametersRequest> {
 public:
  LoadReactor(WorkerServiceImpl* service, LoadParametersResponse* response)
      : service_(service), response_(response) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client finished sending
      if (!status_.ok()) return Finish(ToGrpcStatus(status_));
      if (!has_header_) {
        return Finish(ToGrpcStatus(absl::InvalidArgumentError(
            "LoadParameters stream had no header message")));
      }
      service_->device_queue_.Post([this] { Run(); });
      return;
    }
    if (status_.ok()) {
      if (request_.has_header()) {
        if (has_header_) {
          status_ = absl::InvalidArgumentError(
              "LoadParameters stream has a second header");
        }
        header_ = request_.header();
        has_header_ = true;
      } else if (request_.has_chunk()) {
        if (!has_header_) {
          status_ = absl::InvalidArgumentError(
              "LoadParameters stream must start with the header");
        } else {
          status_ = assembler_.Add(request_.chunk());
        }
      }
    }
    StartRead(&request_);  // drain the stream even after an error
  }

  void OnDone() override { delete this; }

 private:
  void Run() {
    const auto start = std::chrono::steady_clock::now();
    absl::Status status;
    auto tensors = assembler_.Finish();
    if (!tensors.ok()) {
      status = tensors.status();
    } else {
      auto loaded = service_->executor_->Load(header_, std::move(*tensors));
      status = loaded.status();
      if (loaded.ok()) {
        *response_ = *loaded;
        service_->ObserveCost(loaded->cost());
      }
    }
    service_->Observe("load", SecondsSince(start), status);
    Finish(ToGrpcStatus(status));
  }

  WorkerServiceImpl* service_;
  LoadParametersResponse* response_;
  LoadParametersRequest request_;
  LoadParametersHeader header_;
  bool has_header_ = false;
  ChunkAssembler assembler_;
  absl::Status status_;
};

grpc::ServerReadReactor<LoadParametersRequest>* WorkerServiceImpl::LoadParameters(
    grpc::CallbackServerContext* context, LoadParametersResponse* response) {
  if (absl::Status refused = CheckCaller(*context); !refused.ok()) {
    return new Refused<grpc::ServerReadReactor<LoadParametersRequest>>(refused);
  }
  return new LoadReactor(this, response);
}

// Server stream of parameter chunks, one write in flight at a time.
class WorkerServiceImpl::SnapshotReactor
    : public grpc::ServerWriteReactor<TensorChunk> {
 public:
  SnapshotReactor(WorkerServiceImpl* service, const SnapshotRequest* request)
      : service_(service) {
    const SnapshotRequest copy = *request;
    service_->device_queue_.Post([this, copy] {
      const auto start = std::chrono::steady_clock::now();
      auto chunks = service_->executor_->Snapshot(
          copy.job_id(), copy.max_chunk_bytes(),
          std::vector<std::string>(copy.names().begin(), copy.names().end()),
          copy.optimizer_state());
      service_->Observe("snapshot", SecondsSince(start), chunks.status());
      if (!chunks.ok()) return Finish(ToGrpcStatus(chunks.status()));
      chunks_ = std::move(*chunks);
      NextWrite();
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                        "client went away"));
    NextWrite();
  }

  void OnDone() override { delete this; }

 private:
  void NextWrite() {
    if (next_ == chunks_.size()) return Finish(grpc::Status::OK);
    StartWrite(&chunks_[next_++]);
  }

  WorkerServiceImpl* service_;
  std::vector<TensorChunk> chunks_;
  size_t next_ = 0;
};

grpc::ServerWriteReactor<TensorChunk>* WorkerServiceImpl::Snapshot(
    grpc::CallbackServerContext* context, const SnapshotRequest* request) {
  if (absl::Status refused = CheckCaller(*context); !refused.ok()) {
    return new Refused<grpc::ServerWriteReactor<TensorChunk>>(refused);
  }
  return new SnapshotReactor(this, request);
}

template <typename Response, typename Task>
grpc::ServerUnaryReactor* WorkerServiceImpl::RunCostedTask(grpc::CallbackServerContext* context,
                                                          const char* name,
                                                          const std::string& job_id,
                                                          Response* response, Task task) {
  return RunOnDevice(context, name, [this, name, job_id, response, task] {
    absl::StatusOr<Response> result = task();
    if (result.ok()) {
      ObserveCost(result->cost());
      if (metrics_ != nullptr) metrics_->ObserveJobTask(job_id, name, result->cost().measured_s());
      *response = std::move(*result);
    }
    return result.status();
  });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::JoinGroup(
    grpc::CallbackServerContext* context, const JoinGroupRequest* request,
    JoinGroupResponse*) {
  return RunOnDevice(context, "join_group",
                     [this, request] { return executor_->JoinGroup(*request); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Forward(
    grpc::CallbackServerContext* context, const ForwardRequest* request,
    ForwardResponse* response) {
  return RunCostedTask(context, "forward", request->key().job_id(), response,
                       [this, request] { return executor_->Forward(*request); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Backward(
    grpc::CallbackServerContext* context, const BackwardRequest* request,
    BackwardResponse* response) {
  return RunCostedTask(context, "backward", request->key().job_id(), response,
                       [this, request] { return executor_->Backward(*request); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::ApplyUpdate(
    grpc::CallbackServerContext* context, const ApplyUpdateRequest* request,
    ApplyUpdateResponse* response) {
  return RunCostedTask(context, "update", request->job_id(), response,
                       [this, request] { return executor_->ApplyUpdate(*request); });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::TrainRun(
    grpc::CallbackServerContext* context, const TrainRunRequest* request,
    TrainRunResponse* response) {
  return RunOnDevice(context, "train_run", [this, request, response]() -> absl::Status {
    absl::StatusOr<TrainRunResponse> result = executor_->TrainRun(*request);
    if (!result.ok()) return result.status();
    // Each step's three tasks, as a run of task calls would have shown
    // them: the run's measured span shared out over its steps.
    const int steps = result->losses_size();
    for (const CostReport* task : {&result->forward(), &result->backward(), &result->update()}) {
      CostReport each = *task;
      each.clear_work();
      for (int i = 0; i < steps; ++i) ObserveCost(each);
    }
    if (metrics_ != nullptr && steps > 0) {
      metrics_->ObserveJobTask(request->job_id(), "train_run", result->measured_s());
    }
    *response = std::move(*result);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Release(
    grpc::CallbackServerContext* context, const ReleaseRequest* request,
    ReleaseResponse*) {
  return RunOnDevice(context, "release", [this, request] {
    // The job's series go with it: the label stays bounded to resident jobs.
    if (metrics_ != nullptr) metrics_->ForgetJob(request->job_id());
    return executor_->Release(request->job_id());
  });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::ProbeBaselines(
    grpc::CallbackServerContext* context, const ProbeBaselinesRequest* request,
    ProbeBaselinesResponse* response) {
  // On the device queue: no task runs while the probe times the device.
  return RunOnDevice(context, "probe", [this, request, response]() -> absl::Status {
    absl::StatusOr<ProbeBaselinesResponse> r = executor_->ProbeBaselines(*request);
    if (!r.ok()) return r.status();
    *response = std::move(*r);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* WorkerServiceImpl::GetInfo(
    grpc::CallbackServerContext* context, const GetInfoRequest*,
    WorkerInfo* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status refused = CheckCaller(*context); !refused.ok()) {
    reactor->Finish(ToGrpcStatus(refused));
    return reactor;
  }
  // Answered at once, not queued behind running tasks.
  response->set_kind(kind_);
  response->set_device(executor_->device_name());
  response->set_version(kHptVersion);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace hpt
