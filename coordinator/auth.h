// Who may call the JobService: bearer tokens read from a file (the
// coordinator's --tokens_file), each naming its user, and the ownership
// rule. A job belongs to the user who submitted it; only that user or an
// admin may see, watch, cancel, export or resume it, and ListJobs shows a
// user their own jobs (an admin all). Without a tokens file nobody is
// asked and everyone may do everything (the loopback demo).
//
// The file: one token per line, "TOKEN USER" or "TOKEN USER admin"; blank
// lines and lines starting with # are skipped. Calls carry the header
// "authorization: Bearer TOKEN".
#ifndef HPT_COORDINATOR_AUTH_H_
#define HPT_COORDINATOR_AUTH_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "proto/job_service.pb.h"

namespace hpt {

struct Caller {
  std::string user;  // empty with authentication off
  bool admin = false;
};

class TokenTable {
 public:
  // Errors name the file and the line, never a token.
  static absl::StatusOr<TokenTable> Load(const std::string& path);
  static absl::StatusOr<TokenTable> Parse(const std::string& text, const std::string& origin);

  // The caller an "authorization" header value names; UNAUTHENTICATED
  // when it is missing, not a bearer token, or unknown.
  absl::StatusOr<Caller> Authenticate(const std::string* authorization) const;
  size_t size() const { return users_.size(); }

 private:
  std::map<std::string, Caller> users_;  // by token
};

// OK when `caller` may act on `job`; PERMISSION_DENIED otherwise.
absl::Status MayAccess(const Caller& caller, const Job& job);

}  // namespace hpt

#endif  // HPT_COORDINATOR_AUTH_H_
