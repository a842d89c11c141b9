#include "coordinator/jobs/job_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/stored_enums.h"

namespace hpt {
namespace {

absl::Status SqliteError(sqlite3* db, const std::string& what) {
  return absl::InternalError(absl::StrCat("job store: ", what, ": ", sqlite3_errmsg(db)));
}

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& state_dir) {
  if (state_dir.empty()) return absl::InvalidArgumentError("--state_dir is empty");
  if (mkdir(state_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("--state_dir '", state_dir, "': cannot create: ", std::strerror(errno)));
  }
  // One coordinator per state folder: a second would re-queue the first's
  // running jobs. The lock goes with the process, however it ends.
  const std::string lock_path = state_dir + "/LOCK";
  const int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (lock_fd >= 0) close(lock_fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "--state_dir '", state_dir, "' is in use by another coordinator (", lock_path, ")"));
  }
  const std::string path = state_dir + "/jobs.db";
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    absl::Status s = absl::FailedPreconditionError(
        absl::StrCat("job store '", path, "': ", db ? sqlite3_errmsg(db) : "cannot open"));
    sqlite3_close(db);
    close(lock_fd);
    return s;
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<JobStore> store(new JobStore(db, path, lock_fd));
  absl::MutexLock lock(&store->mu_);
  // WAL: readers never block the writer; synchronous=FULL: a committed
  // transaction survives a power cut, not just a process crash.
  for (const char* sql :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, job BLOB NOT NULL)",
        "CREATE TABLE IF NOT EXISTS work_records (id TEXT PRIMARY KEY, record BLOB NOT NULL)",
        "CREATE TABLE IF NOT EXISTS histories (id TEXT PRIMARY KEY, record BLOB NOT NULL)",
        "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT OR IGNORE INTO counters VALUES ('next_job', 1)"}) {
    if (absl::Status s = store->Exec(sql); !s.ok()) return s;
  }
  return store;
}

JobStore::~JobStore() {
  absl::MutexLock lock(&mu_);
  sqlite3_close(db_);
  close(lock_fd_);
}

absl::Status JobStore::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    absl::Status s =
        absl::InternalError(absl::StrCat("job store: ", sql, ": ", error ? error : "failed"));
    sqlite3_free(error);
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> JobStore::NextJobNumber() {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  int64_t number = 0;
  {
    Statement read(db_, "SELECT value FROM counters WHERE name = 'next_job'");
    if (!read.ok() || sqlite3_step(read.get()) != SQLITE_ROW) {
      Exec("ROLLBACK").IgnoreError();
      return SqliteError(db_, "reading the job counter");
    }
    number = sqlite3_column_int64(read.get(), 0);
  }
  Statement bump(db_, "UPDATE counters SET value = value + 1 WHERE name = 'next_job'");
  if (!bump.ok() || sqlite3_step(bump.get()) != SQLITE_DONE) {
    Exec("ROLLBACK").IgnoreError();
    return SqliteError(db_, "advancing the job counter");
  }
  if (absl::Status s = Exec("COMMIT"); !s.ok()) return s;
  return number;
}

absl::Status JobStore::Put(const Job& job) {
  const std::string bytes = job.SerializeAsString();
  absl::MutexLock lock(&mu_);
  Statement put(db_, "INSERT OR REPLACE INTO jobs (id, job) VALUES (?1, ?2)");
  if (!put.ok()) return SqliteError(db_, "preparing a job write");
  sqlite3_bind_text(put.get(), 1, job.job_id().data(), int(job.job_id().size()), SQLITE_TRANSIENT);
  sqlite3_bind_blob(put.get(), 2, bytes.data(), int(bytes.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(put.get()) != SQLITE_DONE) {
    return SqliteError(db_, absl::StrCat("writing job ", job.job_id()));
  }
  return absl::OkStatus();
}

absl::Status JobStore::Remove(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  for (const char* sql :
       {"DELETE FROM jobs WHERE id = ?1", "DELETE FROM work_records WHERE id = ?1",
        "DELETE FROM histories WHERE id = ?1"}) {
    Statement del(db_, sql);
    if (!del.ok()) return SqliteError(db_, "preparing a job delete");
    sqlite3_bind_text(del.get(), 1, job_id.data(), int(job_id.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(del.get()) != SQLITE_DONE) {
      return SqliteError(db_, absl::StrCat("deleting job ", job_id));
    }
  }
  return absl::OkStatus();
}

absl::Status JobStore::PutBlob(const char* table, const std::string& what,
                               const std::string& job_id, const google::protobuf::Message& message) {
  const std::string bytes = message.SerializeAsString();
  absl::MutexLock lock(&mu_);
  Statement put(db_, absl::StrCat("INSERT OR REPLACE INTO ", table, " (id, record) VALUES (?1, ?2)").c_str());
  if (!put.ok()) return SqliteError(db_, absl::StrCat("preparing a ", what, " write"));
  sqlite3_bind_text(put.get(), 1, job_id.data(), int(job_id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_blob(put.get(), 2, bytes.data(), int(bytes.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(put.get()) != SQLITE_DONE) {
    return SqliteError(db_, absl::StrCat("writing the ", what, " of ", job_id));
  }
  return absl::OkStatus();
}

absl::Status JobStore::GetBlob(const char* table, const std::string& what,
                               const std::string& job_id, google::protobuf::Message* message) {
  absl::MutexLock lock(&mu_);
  Statement get(db_, absl::StrCat("SELECT record FROM ", table, " WHERE id = ?1").c_str());
  if (!get.ok()) return SqliteError(db_, absl::StrCat("preparing a ", what, " read"));
  sqlite3_bind_text(get.get(), 1, job_id.data(), int(job_id.size()), SQLITE_TRANSIENT);
  const int rc = sqlite3_step(get.get());
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat(job_id, " has no ", what, " yet"));
  if (rc != SQLITE_ROW) return SqliteError(db_, absl::StrCat("reading the ", what, " of ", job_id));
  if (!message->ParseFromArray(sqlite3_column_blob(get.get(), 0), sqlite3_column_bytes(get.get(), 0))) {
    return absl::DataLossError(
        absl::StrCat("job store '", path_, "': the ", what, " of ", job_id, " does not parse"));
  }
  UpgradeStoredEnums(message);
  return absl::OkStatus();
}

absl::Status JobStore::PutWorkRecord(const std::string& job_id, const WorkRecord& record) {
  return PutBlob("work_records", "work record", job_id, record);
}

absl::StatusOr<WorkRecord> JobStore::GetWorkRecord(const std::string& job_id) {
  WorkRecord record;
  RETURN_IF_ERROR(GetBlob("work_records", "work record", job_id, &record));
  return record;
}

absl::Status JobStore::PutHistory(const std::string& job_id, const LossHistory& history) {
  return PutBlob("histories", "loss history", job_id, history);
}

absl::StatusOr<LossHistory> JobStore::GetHistory(const std::string& job_id) {
  LossHistory history;
  RETURN_IF_ERROR(GetBlob("histories", "loss history", job_id, &history));
  return history;
}

absl::StatusOr<std::vector<Job>> JobStore::LoadAll() {
  absl::MutexLock lock(&mu_);
  Statement all(db_, "SELECT id, job FROM jobs ORDER BY id");
  if (!all.ok()) return SqliteError(db_, "preparing the job listing");
  std::vector<Job> jobs;
  int rc;
  while ((rc = sqlite3_step(all.get())) == SQLITE_ROW) {
    const void* blob = sqlite3_column_blob(all.get(), 1);
    const int size = sqlite3_column_bytes(all.get(), 1);
    Job job;
    if (!job.ParseFromArray(blob, size)) {
      return absl::DataLossError(absl::StrCat(
          "job store '", path_, "': the row of job ",
          reinterpret_cast<const char*>(sqlite3_column_text(all.get(), 0)), " does not parse"));
    }
    UpgradeStoredEnums(&job);
    jobs.push_back(std::move(job));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "listing jobs");
  return jobs;
}

}  // namespace hpt
