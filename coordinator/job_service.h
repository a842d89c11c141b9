// JobServiceImpl: the coordinator's gRPC face to users, a thin adapter over
// JobManager and JobQueries (callback API). The workers' face is worker_registry_service.h.
#ifndef HPT_COORDINATOR_JOB_SERVICE_H_
#define HPT_COORDINATOR_JOB_SERVICE_H_

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/grpc_setup.h"
#include "common/task_queue.h"
#include "coordinator/auth.h"
#include "coordinator/jobs/job_manager.h"
#include "coordinator/jobs/job_queries.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {

class JobServiceImpl final : public JobService::CallbackService {
 public:
  // `tokens` null: no authentication (auth.h). `warnings`: what
  // GetServerInfo tells every client (exposure.h). `tls`: the server's own
  // credentials; with them on, a caller's certificate, where it sends one,
  // must name the client or coordinator role (common/peer_role.h).
  JobServiceImpl(JobManager* jobs, JobQueries* queries, const TokenTable* tokens = nullptr,
                 std::vector<std::string> warnings = {}, TlsCredentials tls = {})
      : jobs_(jobs),
        queries_(queries),
        tokens_(tokens),
        warnings_(std::move(warnings)),
        tls_(std::move(tls)) {
    for (auto& loader : loaders_) loader = std::make_unique<TaskQueue>("loader");
  }

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const SubmitJobRequest* request,
                                      Job* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const GetJobRequest* request,
                                   Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const ListJobsRequest* request,
                                     ListJobsResponse* response) override;
  grpc::ServerWriteReactor<Job>* WatchJob(
      grpc::CallbackServerContext* context,
      const WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const CancelJobRequest* request,
                                      Job* response) override;

  grpc::ServerWriteReactor<ExportModelChunk>* ExportModel(
      grpc::CallbackServerContext* context, const ExportModelRequest* request) override;
  grpc::ServerUnaryReactor* ListCheckpoints(grpc::CallbackServerContext* context,
                                            const ListCheckpointsRequest* request,
                                            ListCheckpointsResponse* response) override;
  grpc::ServerUnaryReactor* ResumeJob(grpc::CallbackServerContext* context,
                                      const ResumeJobRequest* request,
                                      Job* response) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* context,
                                      const DeleteJobRequest* request,
                                      DeleteJobResponse* response) override;
  grpc::ServerUnaryReactor* ProbeBaselines(grpc::CallbackServerContext* context,
                                           const ProbeJobBaselinesRequest* request,
                                           Job* response) override;
  grpc::ServerUnaryReactor* WhatIf(grpc::CallbackServerContext* context,
                                   const WhatIfRequest* request,
                                   WhatIfResponse* response) override;
  grpc::ServerUnaryReactor* GetJobHistory(grpc::CallbackServerContext* context,
                                          const GetJobHistoryRequest* request,
                                          JobHistory* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const GetServerInfoRequest* request,
                                          ServerInfo* response) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const PredictRequest* request,
                                    PredictResponse* response) override;
  grpc::ServerUnaryReactor* GetWorkRecord(grpc::CallbackServerContext* context,
                                          const GetWorkRecordRequest* request,
                                          WorkRecord* response) override;

 private:
  class WatchReactor;
  class ExportReactor;
  // OK unless the caller sent a certificate whose role is not a user's
  // (a worker's, or none).
  absl::Status CheckCertificate(const grpc::CallbackServerContext& context) const;
  // The caller its certificate and token name (CheckCertificate first).
  absl::StatusOr<Caller> Authenticate(grpc::CallbackServerContext* context) const;
  // OK when the caller may act on the job (it exists and is theirs, or they
  // are an admin).
  absl::Status Authorize(grpc::CallbackServerContext* context, const std::string& job_id) const;
  // Runs `load` (a submit or resume: it loads the job's data; a probe) on a loader
  // thread, never on gRPC's, and finishes the call from there.
  // Runs `work` (returning absl::StatusOr<Response>) on a loader and
  // answers with what it returns.
  template <typename Response, typename Work>
  grpc::ServerUnaryReactor* OnLoader(grpc::CallbackServerContext* context, Response* response,
                                     Work work);
  JobManager* const jobs_;
  JobQueries* const queries_;
  const TokenTable* const tokens_;
  const std::vector<std::string> warnings_;
  const TlsCredentials tls_;
  std::array<std::unique_ptr<TaskQueue>, 2> loaders_;
  std::atomic<size_t> next_loader_{0};

  // The loaders in turn: where slow work (loading a job's data, building an
  // export) runs, off gRPC's callback threads.
  TaskQueue& NextLoader() { return *loaders_[next_loader_.fetch_add(1) % loaders_.size()]; }
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOB_SERVICE_H_
