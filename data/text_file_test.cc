#include "data/text_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DataPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR")
                                                              : "/tmp") +
                       "/datapathXXXXXX";
    ASSERT_NE(mkdtemp(base.data()), nullptr);
    char real[4096];
    ASSERT_NE(realpath(base.c_str(), real), nullptr);
    top_ = real;
    root_ = top_ + "/root";
    outside_ = top_ + "/outside";
    ASSERT_EQ(mkdir(root_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0700), 0);
    Write(root_ + "/good.csv", "a,b\n1,2\n");
    Write(outside_ + "/secret.txt", "root:*:20228:0:99999:7:::\n");
    limits_.roots = {root_};
  }
  static void Write(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }

  std::string top_, root_, outside_;
  DataLimits limits_;
};

TEST_F(DataPathTest, ARegularFileUnderARootIsRead) {
  auto text = ReadTextFile(root_ + "/good.csv", limits_);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "a,b\n1,2\n");
  // The same file through a relative-looking path with "..": resolved first.
  EXPECT_TRUE(ReadTextFile(root_ + "/../root/good.csv", limits_).ok());
}

TEST_F(DataPathTest, PathsOutsideTheRootsAreRefusedWithoutTheirContents) {
  for (const std::string& path :
       {outside_ + "/secret.txt", root_ + "/../outside/secret.txt", std::string("/etc/passwd")}) {
    auto text = ReadTextFile(path, limits_);
    ASSERT_FALSE(text.ok()) << path;
    EXPECT_EQ(text.status().code(), absl::StatusCode::kPermissionDenied) << path;
    EXPECT_THAT(text.status().message(), HasSubstr("outside the data roots"));
    EXPECT_THAT(text.status().message(), Not(HasSubstr("root:*")));
  }
  // A root that is a prefix of another folder's name does not admit it.
  ASSERT_EQ(mkdir((root_ + "2").c_str(), 0700), 0);
  Write(root_ + "2/x.csv", "1\n");
  EXPECT_EQ(ReadTextFile(root_ + "2/x.csv", limits_).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(DataPathTest, ASymlinkInsideTheRootToAFileOutsideIsRefused) {
  ASSERT_EQ(symlink((outside_ + "/secret.txt").c_str(), (root_ + "/link.csv").c_str()), 0);
  auto text = ReadTextFile(root_ + "/link.csv", limits_);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(text.status().message(), Not(HasSubstr("root:*")));
  // A link that stays inside is fine.
  ASSERT_EQ(symlink((root_ + "/good.csv").c_str(), (root_ + "/alias.csv").c_str()), 0);
  EXPECT_TRUE(ReadTextFile(root_ + "/alias.csv", limits_).ok());
}

TEST_F(DataPathTest, FifosDevicesAndDirectoriesAreRefusedAtOnce) {
  ASSERT_EQ(mkfifo((root_ + "/pipe.csv").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto fifo = ReadTextFile(root_ + "/pipe.csv", limits_);
  // Nothing writes to the FIFO: a blocking open would never return.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fifo.status().message(), HasSubstr("a FIFO, not a regular file"));

  DataLimits anywhere;
  auto zero = ReadTextFile("/dev/zero", anywhere);
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), HasSubstr("/dev/zero: a device"));

  auto dir = ReadTextFile(root_, limits_);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dir.status().message(), HasSubstr("a directory, not a regular file"));
  // And the reverse: a file where a folder is wanted.
  EXPECT_EQ(ResolveDataPath(root_ + "/good.csv", limits_, /*directory=*/true).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ResolveDataPath(root_, limits_, /*directory=*/true).ok());
}

TEST_F(DataPathTest, MissingAndOversizedFilesAreNamedErrors) {
  auto missing = ReadTextFile(root_ + "/nope.csv", limits_);
  // The request's fault, with the roots to look in (NOT_FOUND is "no such
  // job" to hptctl).
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.csv: no such file"));
  EXPECT_THAT(missing.status().message(), HasSubstr("(data roots: " + root_));
  auto relative = ReadTextFile("data/temps.csv", limits_);
  EXPECT_THAT(relative.status().message(), HasSubstr("give it absolute"));
  DataLimits tight = limits_;
  tight.max_file_bytes = 4;
  auto big = ReadTextFile(root_ + "/good.csv", tight);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("8 bytes, over the limit of 4"));
}

TEST(CheckCellsTest, CountsRowsTimesColumnsWithoutOverflow) {
  DataLimits limits;
  limits.max_cells = 100;
  EXPECT_TRUE(CheckCells("x", 10, 10, limits).ok());
  EXPECT_FALSE(CheckCells("x", 11, 10, limits).ok());
  // rows x columns would overflow int64: still refused, not wrapped.
  EXPECT_FALSE(CheckCells("x", int64_t{1} << 40, int64_t{1} << 40, limits).ok());
  EXPECT_THAT(CheckCells("grid", 11, 10, limits).message(),
              HasSubstr("grid: 11 rows x 10 columns is over the limit of 100 cells"));
}

TEST_F(DataPathTest, ALoadPastItsDeadlineStopsNamingTheFile) {
  limits_.deadline = absl::Now() - absl::Seconds(1);
  auto text = ReadTextFile(root_ + "/good.csv", limits_);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("good.csv"));
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("--max_load_s"));
  limits_.deadline = absl::Now() + absl::Hours(1);
  EXPECT_TRUE(ReadTextFile(root_ + "/good.csv", limits_).ok());
}

TEST_F(DataPathTest, ACancelledLoadStops) {
  int asked = 0;
  limits_.cancelled = [&] { return ++asked > 0; };
  auto text = ReadTextFile(root_ + "/good.csv", limits_);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kCancelled);
  EXPECT_GE(asked, 1);
}

TEST(CheckLoadingTest, ChecksEvery4096thLineOnly) {
  DataLimits limits;
  limits.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_TRUE(CheckLoadingEvery(4095, "f", limits).ok());
  EXPECT_TRUE(CheckLoadingEvery(1, "f", limits).ok());
  EXPECT_EQ(CheckLoadingEvery(8192, "f", limits).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(CheckLoading("f", DataLimits()).ok());
}

}  // namespace
}  // namespace hpt
