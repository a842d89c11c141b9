#include "coordinator/auth.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/user_file.h"

namespace hpt {

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  // A line a user: 16 MiB is far past any team's table.
  absl::StatusOr<std::string> text = ReadUserTextFile(path, 16 << 20);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tokens_file: ", text.status().message()));
  }
  return Parse(*text, path);
}

absl::StatusOr<TokenTable> TokenTable::Parse(const std::string& text,
                                             const std::string& origin) {
  TokenTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, " line ", line_number, ": ", why,
                       " (expected \"TOKEN USER\" or \"TOKEN USER admin\")"));
    };
    if (fields.size() < 2 || fields.size() > 3) return bad("wrong number of fields");
    if (fields.size() == 3 && fields[2] != "admin") return bad("third field is not 'admin'");
    if (fields[0].size() < 16) return bad("token shorter than 16 characters");
    Caller caller{fields[1], fields.size() == 3};
    if (!table.users_.emplace(fields[0], caller).second) return bad("token given twice");
  }
  if (table.users_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, " holds no tokens"));
  }
  return table;
}

absl::StatusOr<Caller> TokenTable::Authenticate(const std::string* authorization) const {
  if (authorization == nullptr || authorization->empty()) {
    return absl::UnauthenticatedError(
        "no bearer token: give hptctl --token_file (header authorization: Bearer TOKEN)");
  }
  absl::string_view value = *authorization;
  if (!absl::ConsumePrefix(&value, "Bearer ")) {
    return absl::UnauthenticatedError("the authorization header is not \"Bearer TOKEN\"");
  }
  auto it = users_.find(std::string(absl::StripAsciiWhitespace(value)));
  if (it == users_.end()) return absl::UnauthenticatedError("unknown token");
  return it->second;
}

absl::Status MayAccess(const Caller& caller, const Job& job) {
  if (caller.admin || caller.user == job.owner()) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("job '", job.job_id(), "' belongs to another user"));
}

}  // namespace hpt
