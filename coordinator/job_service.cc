#include "coordinator/job_service.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_setup.h"
#include "common/grpc_status.h"
#include "common/peer_role.h"
#include "common/tensor_codec.h"
#include "models/torchscript_model.h"

namespace hpt {
namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context,
                               const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

template <typename T>
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context,
                                absl::StatusOr<T> result, T* response) {
  if (result.ok()) *response = std::move(*result);
  return Done(context, result.status());
}

}  // namespace

template <typename Response, typename Work>
grpc::ServerUnaryReactor* JobServiceImpl::OnLoader(grpc::CallbackServerContext* context,
                                                   Response* response, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  NextLoader().Post([reactor, response, work = std::move(work)] {
    absl::StatusOr<Response> done = work();
    if (done.ok()) *response = std::move(*done);
    reactor->Finish(ToGrpcStatus(done.status()));
  });
  return reactor;
}

absl::Status JobServiceImpl::CheckCertificate(const grpc::CallbackServerContext& context) const {
  static constexpr PeerRole kUsers[] = {PeerRole::kClient, PeerRole::kCoordinator};
  return CheckPeerRole(context, tls_, kUsers, "JobService", CertificateNeed::kOptional);
}

absl::StatusOr<Caller> JobServiceImpl::Authenticate(grpc::CallbackServerContext* context) const {
  if (absl::Status s = CheckCertificate(*context); !s.ok()) return s;
  if (tokens_ == nullptr) return Caller{"", true};
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return tokens_->Authenticate(nullptr);
  const std::string value(it->second.data(), it->second.size());
  return tokens_->Authenticate(&value);
}

absl::Status JobServiceImpl::Authorize(grpc::CallbackServerContext* context,
                                       const std::string& job_id) const {
  absl::StatusOr<Caller> caller = Authenticate(context);
  if (!caller.ok()) return caller.status();
  if (caller->admin) return absl::OkStatus();
  absl::StatusOr<Job> job = jobs_->Get(job_id);
  if (!job.ok()) return job.status();
  return MayAccess(*caller, *job);
}

grpc::ServerUnaryReactor* JobServiceImpl::SubmitJob(
    grpc::CallbackServerContext* context, const SubmitJobRequest* request,
    Job* response) {
  // Submit loads the job's data (a CSV may take a moment); that is the
  // validation the caller waits for, so it runs here.
  absl::StatusOr<Caller> caller = Authenticate(context);
  if (!caller.ok()) return Done(context, caller.status());
  return OnLoader(context, response, [this, request, user = caller->user] {
    return jobs_->Submit(*request, user);
  });
}

grpc::ServerUnaryReactor* JobServiceImpl::GetJob(
    grpc::CallbackServerContext* context, const GetJobRequest* request,
    Job* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  return Reply(context, jobs_->Get(request->job_id()), response);
}

grpc::ServerUnaryReactor* JobServiceImpl::ListJobs(
    grpc::CallbackServerContext* context, const ListJobsRequest*,
    ListJobsResponse* response) {
  absl::StatusOr<Caller> caller = Authenticate(context);
  if (!caller.ok()) return Done(context, caller.status());
  std::vector<Job> jobs = jobs_->List();
  if (!caller->admin) {
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(),
                              [&](const Job& j) { return j.owner() != caller->user; }),
               jobs.end());
  }
  std::reverse(jobs.begin(), jobs.end());  // ids grow with time: newest first
  // Room for the omitted ids and framing under the client's 4 MiB limit.
  const size_t budget = kMaxApiMessageBytes - (256 << 10);
  size_t bytes = 0;
  for (Job& job : jobs) {
    const size_t size = job.ByteSizeLong() + 8;
    if (bytes + size > budget) {
      response->set_omitted(response->omitted() + 1);
      if (response->omitted_job_ids_size() < 1000) response->add_omitted_job_ids(job.job_id());
      continue;
    }
    bytes += size;
    *response->add_jobs() = std::move(job);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* JobServiceImpl::WhatIf(grpc::CallbackServerContext* context,
                                                 const WhatIfRequest* request,
                                                 WhatIfResponse* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  return Reply(context, queries_->WhatIf(*request), response);
}

grpc::ServerUnaryReactor* JobServiceImpl::DeleteJob(grpc::CallbackServerContext* context,
                                                    const DeleteJobRequest* request,
                                                    DeleteJobResponse* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  return Reply(context, jobs_->Delete(request->job_id()), response);
}

grpc::ServerUnaryReactor* JobServiceImpl::ProbeBaselines(
    grpc::CallbackServerContext* context, const ProbeJobBaselinesRequest* request, Job* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  // A probe takes seconds to minutes: off gRPC's threads, as a load is.
  return OnLoader(context, response, [this, request] {
    return queries_->ProbeBaselines(request->job_id(), request->steps());
  });
}

grpc::ServerUnaryReactor* JobServiceImpl::GetWorkRecord(grpc::CallbackServerContext* context,
                                                        const GetWorkRecordRequest* request,
                                                        WorkRecord* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  absl::StatusOr<std::shared_ptr<const WorkRecord>> record =
      queries_->WorkRecordOf(request->job_id());
  if (record.ok()) *response = **record;
  return Done(context, record.status());
}

grpc::ServerUnaryReactor* JobServiceImpl::GetJobHistory(grpc::CallbackServerContext* context,
                                                        const GetJobHistoryRequest* request,
                                                        JobHistory* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  if (request->max_points() < 0 || request->max_points() > 100000) {
    return Done(context, absl::InvalidArgumentError(absl::StrCat(
                             "GetJobHistoryRequest.max_points must be in 0..100000, got ",
                             request->max_points())));
  }
  return Reply(context, queries_->HistoryOf(request->job_id(), request->max_points()), response);
}

grpc::ServerUnaryReactor* JobServiceImpl::GetServerInfo(grpc::CallbackServerContext* context,
                                                        const GetServerInfoRequest*,
                                                        ServerInfo* response) {
  if (absl::Status s = CheckCertificate(*context); !s.ok()) return Done(context, s);
  for (const std::string& w : warnings_) response->add_warnings(w);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* JobServiceImpl::Predict(grpc::CallbackServerContext* context,
                                                  const PredictRequest* request,
                                                  PredictResponse* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  // The model's forward takes as long as its input is large: off gRPC's
  // threads, as a load is.
  return OnLoader(context, response, [this, request] { return queries_->Predict(*request); });
}

grpc::ServerUnaryReactor* JobServiceImpl::CancelJob(
    grpc::CallbackServerContext* context, const CancelJobRequest* request,
    Job* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  return Reply(context, jobs_->Cancel(request->job_id()), response);
}

grpc::ServerUnaryReactor* JobServiceImpl::ListCheckpoints(
    grpc::CallbackServerContext* context, const ListCheckpointsRequest* request,
    ListCheckpointsResponse* response) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  absl::StatusOr<std::vector<CheckpointInfo>> list = jobs_->Checkpoints(request->job_id());
  if (list.ok()) {
    for (CheckpointInfo& c : *list) *response->add_checkpoints() = std::move(c);
  }
  return Done(context, list.status());
}

grpc::ServerUnaryReactor* JobServiceImpl::ResumeJob(grpc::CallbackServerContext* context,
                                                    const ResumeJobRequest* request,
                                                    Job* response) {
  if (request->step() < 0) {
    return Done(context, absl::InvalidArgumentError(absl::StrCat(
                             "ResumeJobRequest.step must not be negative, got ",
                             request->step())));
  }
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) return Done(context, s);
  // Resume reloads the job's data, as Submit does.
  return OnLoader(context, response,
                  [this, request] { return jobs_->Resume(request->job_id(), request->step()); });
}

// Streams a trained model: its configuration, its parameters in chunks,
// then its TorchScript file in pieces, one write at a time. Start builds
// them (LibTorch compiles the module: seconds for a large model), so it
// runs on a loader thread, never on gRPC's callback threads.
class JobServiceImpl::ExportReactor : public grpc::ServerWriteReactor<ExportModelChunk> {
 public:
  void Start(JobQueries* queries, const std::string& job_id) {
    absl::StatusOr<std::shared_ptr<const TrainedModel>> model = queries->TrainedModelOf(job_id);
    if (!model.ok()) {
      Finish(ToGrpcStatus(model.status()));
      return;
    }
    *messages_.emplace_back().mutable_model() = (*model)->config;
    if ((*model)->units.mean_size() > 0) {
      *messages_.emplace_back().mutable_data_units() = (*model)->units;
    }
    for (TensorChunk& c : SplitTensors((*model)->parameters)) {
      *messages_.emplace_back().mutable_chunk() = std::move(c);
    }
    absl::StatusOr<std::string> script =
        TorchModelBytes((*model)->config, (*model)->parameters, (*model)->units);
    if (!script.ok()) {
      Finish(ToGrpcStatus(script.status()));
      return;
    }
    constexpr size_t kPiece = size_t{1} << 20;  // well under gRPC's 4 MiB message limit
    for (size_t at = 0; at < script->size(); at += kPiece) {
      messages_.emplace_back().set_torchscript(script->substr(at, kPiece));
    }
    Next();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (next_ == messages_.size()) {
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&messages_[next_++]);
  }

  std::vector<ExportModelChunk> messages_;
  size_t next_ = 0;
};

grpc::ServerWriteReactor<ExportModelChunk>* JobServiceImpl::ExportModel(
    grpc::CallbackServerContext* context, const ExportModelRequest* request) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) {
    return new Refused<grpc::ServerWriteReactor<ExportModelChunk>>(s);
  }
  auto* reactor = new ExportReactor();
  NextLoader().Post([reactor, queries = queries_, job_id = request->job_id()] {
    reactor->Start(queries, job_id);
  });
  return reactor;
}

// Streams a job's updates. Updates arriving while a write is in flight are
// coalesced into the latest one; the stream ends after a terminal state.
class JobServiceImpl::WatchReactor : public grpc::ServerWriteReactor<Job> {
 public:
  WatchReactor(JobManager* jobs, const std::string& job_id) : jobs_(jobs) {
    absl::StatusOr<int64_t> token =
        jobs_->Watch(job_id, [this](const Job& job) { OnUpdate(job); });
    absl::MutexLock lock(&mu_);
    if (!token.ok()) {
      FinishOnce(ToGrpcStatus(token.status()));
      return;
    }
    token_ = *token;
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finish_after_write_.has_value()) return FinishOnce(*finish_after_write_);
    if (!ok) {
      return FinishOnce(
          grpc::Status(grpc::StatusCode::CANCELLED, "watcher went away"));
    }
    if (JobManager::IsTerminal(current_.state())) {
      return FinishOnce(grpc::Status::OK);
    }
    if (pending_.has_value()) StartNextWrite();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled"));
  }

  void OnDone() override {
    if (token_ >= 0) jobs_->Unwatch(token_);
    delete this;
  }

 private:
  // Called by JobManager under its lock.
  void OnUpdate(const Job& job) {
    absl::MutexLock lock(&mu_);
    if (finished_ || finish_after_write_.has_value()) return;
    pending_ = job;
    if (!writing_) StartNextWrite();
  }

  void StartNextWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    current_ = std::move(*pending_);
    pending_.reset();
    writing_ = true;
    StartWrite(&current_);
  }

  // Finishes the stream once; with a write in flight, after it completes.
  void FinishOnce(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    if (writing_) {
      if (!finish_after_write_.has_value()) finish_after_write_ = status;
      return;
    }
    finished_ = true;
    Finish(status);
  }

  JobManager* const jobs_;
  int64_t token_ = -1;
  absl::Mutex mu_;
  Job current_ ABSL_GUARDED_BY(mu_);
  std::optional<Job> pending_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_after_write_ ABSL_GUARDED_BY(mu_);
};

grpc::ServerWriteReactor<Job>* JobServiceImpl::WatchJob(
    grpc::CallbackServerContext* context, const WatchJobRequest* request) {
  if (absl::Status s = Authorize(context, request->job_id()); !s.ok()) {
    return new Refused<grpc::ServerWriteReactor<Job>>(s);
  }
  return new WatchReactor(jobs_, request->job_id());
}

}  // namespace hpt
