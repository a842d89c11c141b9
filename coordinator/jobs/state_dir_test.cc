#include "coordinator/jobs/state_dir.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hpt {
namespace {

using ::testing::HasSubstr;

std::function<const char*(const char*)> Env(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

TEST(StateDirTest, FollowsXdgStateHomeThenHome) {
  EXPECT_EQ(*DefaultStateDir(Env({{"XDG_STATE_HOME", "/x/state"}, {"HOME", "/home/u"}})),
            "/x/state/hpt");
  // A relative XDG_STATE_HOME is invalid by the specification: ignored.
  EXPECT_EQ(*DefaultStateDir(Env({{"XDG_STATE_HOME", "rel"}, {"HOME", "/home/u"}})),
            "/home/u/.local/state/hpt");
  EXPECT_EQ(*DefaultStateDir(Env({{"HOME", "/home/u"}})), "/home/u/.local/state/hpt");
  absl::StatusOr<std::string> none = DefaultStateDir(Env({}));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("--state_dir=DIR"));
}

TEST(StateDirTest, MakesMissingParentsAndRefusesAFile) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/state_dir_test";
  const std::string dir = root + "/a/b/hpt";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_TRUE(MakeDirectories(dir).ok());  // again: already there
  std::ofstream(root + "/file") << "x";
  absl::Status file = MakeDirectories(root + "/file");
  EXPECT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.message()), HasSubstr("is not a directory"));
  absl::Status under_file = MakeDirectories(root + "/file/hpt");
  EXPECT_FALSE(under_file.ok());
  EXPECT_THAT(std::string(under_file.message()), HasSubstr(root + "/file/hpt"));
}

}  // namespace
}  // namespace hpt
