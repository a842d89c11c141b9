// GrpcWorkerClient: WorkerClient over gRPC. Every call carries a deadline;
// task calls that fail with UNAVAILABLE are retried (they are idempotent,
// keyed by job, step, micro-batch and segment), so a dropped connection
// never applies an update twice.
//
// A task's deadline follows what the same method has cost on this worker:
// kDeadlineFactor times its slowest call so far, at least min_task_deadline
// and at most task_deadline (which the first call of a method gets). Abort
// ends calls in flight at once (TryCancel) rather than at their deadline.
#ifndef HPT_COORDINATOR_DISPATCH_GRPC_WORKER_CLIENT_H_
#define HPT_COORDINATOR_DISPATCH_GRPC_WORKER_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc_setup.h"
#include "coordinator/dispatch/worker_client.h"
#include "proto/worker_service.grpc.pb.h"

namespace hpt {

class GrpcWorkerClient : public WorkerClient {
 public:
  struct Options {
    absl::Duration task_deadline = absl::Minutes(5);  // the most a task may take
    absl::Duration min_task_deadline = absl::Seconds(10);
    absl::Duration load_deadline = absl::Minutes(10);
    int max_attempts = 3;
    TlsCredentials tls;  // the channel's; default plaintext
    // Called after each RPC with its method and final status code name.
    std::function<void(const std::string& method, const std::string& code,
                       double seconds)>
        on_rpc;
  };

  GrpcWorkerClient(std::string address, Options options);

  const std::string& address() const override { return address_; }
  absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header,
      const std::vector<TensorChunk>& chunks) override;
  absl::Status JoinGroup(const JoinGroupRequest& request) override;
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override;
  absl::StatusOr<BackwardResponse> Backward(
      const BackwardRequest& request) override;
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) override;
  // Its deadline is the task deadline times the run's steps.
  absl::StatusOr<TrainRunResponse> TrainRun(const TrainRunRequest& request) override;
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, const std::vector<std::string>& names,
      bool optimizer_state = false) override;
  absl::Status Release(const std::string& job_id) override;
  absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(
      const ProbeBaselinesRequest& request) override;
  void Abort(const absl::Status& reason) override;

  // A call of `method` may take this long now.
  absl::Duration TaskDeadline(const std::string& method) const;
  static constexpr double kDeadlineFactor = 20;

 private:
  // Registers a call in flight; the abort's reason when the client was
  // aborted (the call must not start).
  absl::Status Begin(grpc::ClientContext* context);
  // Unregisters it and notes what it took; when the client was aborted
  // meanwhile, sets `status` to the abort's reason and returns true.
  bool End(grpc::ClientContext* context, const std::string& method, absl::Duration took,
           absl::Status* status);

  template <typename Request, typename Response, typename Method>
  absl::Status CallWithRetry(const char* name, Method method,
                             const Request& request, Response* response,
                             absl::Duration deadline, bool abortable = true);

  std::string address_;
  Options options_;
  std::unique_ptr<WorkerService::Stub> stub_;
  mutable absl::Mutex mu_;
  std::set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
  absl::Status aborted_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Duration> slowest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_DISPATCH_GRPC_WORKER_CLIENT_H_
