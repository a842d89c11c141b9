#include "coordinator/auth.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

constexpr char kFile[] = R"(# team tokens
alice-0123456789abcdef alice
  bob-0123456789abcdef   bob

root-0123456789abcdef ops admin
)";

TEST(AuthTest, TokensNameTheirUsers) {
  absl::StatusOr<TokenTable> t = TokenTable::Parse(kFile, "tokens");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->size(), 3u);
  const std::string alice = "Bearer alice-0123456789abcdef";
  absl::StatusOr<Caller> a = t->Authenticate(&alice);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->user, "alice");
  EXPECT_FALSE(a->admin);
  const std::string root = "Bearer root-0123456789abcdef";
  EXPECT_TRUE(t->Authenticate(&root)->admin);
  EXPECT_EQ(t->Authenticate(&root)->user, "ops");
}

TEST(AuthTest, MissingMalformedOrUnknownTokensAreUnauthenticated) {
  TokenTable t = *TokenTable::Parse(kFile, "tokens");
  EXPECT_EQ(t.Authenticate(nullptr).status().code(), absl::StatusCode::kUnauthenticated);
  const std::string empty, basic = "Basic YWxpY2U6eA==", unknown = "Bearer nope-0123456789abcdef";
  EXPECT_EQ(t.Authenticate(&empty).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(t.Authenticate(&basic).status().code(), absl::StatusCode::kUnauthenticated);
  absl::Status s = t.Authenticate(&unknown).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(s.message().find("nope"), std::string::npos);  // never echoes a token
}

TEST(AuthTest, BadFilesNameTheLineNotTheToken) {
  absl::Status s = TokenTable::Parse("good-0123456789abcdef al\nxq7z bob\n", "t.txt").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("t.txt line 2"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("xq7z"), std::string::npos);
  EXPECT_NE(TokenTable::Parse("a-0123456789abcdefg u root\n", "t").status().message().find(
                "line 1"),
            std::string::npos);
  EXPECT_FALSE(TokenTable::Parse("# nothing\n", "t").ok());
  EXPECT_FALSE(TokenTable::Parse("x-0123456789abcdefg a\nx-0123456789abcdefg b\n", "t").ok());
  EXPECT_EQ(TokenTable::Load("/nonexistent/tokens").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AuthTest, OwnersAndAdminsMayAccessAJob) {
  Job job;
  job.set_job_id("job-000004");
  job.set_owner("alice");
  EXPECT_TRUE(MayAccess({"alice", false}, job).ok());
  EXPECT_TRUE(MayAccess({"ops", true}, job).ok());
  absl::Status s = MayAccess({"bob", false}, job);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("job-000004"), std::string::npos);
}

}  // namespace
}  // namespace hpt
