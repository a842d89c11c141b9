// JobStore: the coordinator's job registry on disk, a SQLite database in
// WAL mode under --state_dir (Debian's libsqlite3). Each job is one row
// holding its Job message; a counter row keeps job ids unique across
// restarts. Writes are transactions: a crash leaves the last committed
// state, never a torn one.
//
// Why SQLite rather than RocksDB: one small table of whole-job records,
// written a few times a second at most, read in full once at start; SQLite
// is a Debian package with a C API and one file to back up, and WAL mode
// lets `sqlite3 jobs.db` read it while the coordinator runs.
//
// Thread-safe (one connection behind a mutex).
#ifndef HPT_COORDINATOR_JOBS_JOB_STORE_H_
#define HPT_COORDINATOR_JOBS_JOB_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

struct sqlite3;

namespace hpt {

class JobStore {
 public:
  // Opens (creating if needed) `state_dir`/jobs.db. The folder must exist
  // or be creatable; FAILED_PRECONDITION if another process holds it.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(const std::string& state_dir);
  ~JobStore();

  // Reserves the next job number (1, 2, ...), durable before it returns.
  absl::StatusOr<int64_t> NextJobNumber();
  // Inserts or replaces the job's row.
  absl::Status Put(const Job& job);
  absl::Status Remove(const std::string& job_id);
  // A job's work record (proto/work.proto), kept beside its row;
  // NOT_FOUND before the first is written.
  absl::Status PutWorkRecord(const std::string& job_id, const WorkRecord& record);
  absl::StatusOr<WorkRecord> GetWorkRecord(const std::string& job_id);
  // Its loss history (step_history.h), likewise.
  absl::Status PutHistory(const std::string& job_id, const LossHistory& history);
  absl::StatusOr<LossHistory> GetHistory(const std::string& job_id);
  // Every stored job, in id order.
  absl::StatusOr<std::vector<Job>> LoadAll();

  const std::string& path() const { return path_; }

 private:
  // One message per job in `table` (id, record); `what` names it in errors.
  absl::Status PutBlob(const char* table, const std::string& what, const std::string& job_id,
                       const google::protobuf::Message& message);
  absl::Status GetBlob(const char* table, const std::string& what, const std::string& job_id,
                       google::protobuf::Message* message);
  JobStore(sqlite3* db, std::string path, int lock_fd)
      : db_(db), path_(std::move(path)), lock_fd_(lock_fd) {}
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  const std::string path_;
  const int lock_fd_;  // flock'ed state_dir/LOCK
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_STORE_H_
