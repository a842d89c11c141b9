#include "common/output_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
  }
  closedir(d);
  return names;
}

class OutputFileTest : public ::testing::Test {
 protected:
  const std::string dir_ = testing::MakeTempDir("output_file_test");
};

TEST_F(OutputFileTest, WritesAndReplacesAFileLeavingNoTemporary) {
  const std::string path = dir_ + "/report.txt";
  ASSERT_TRUE(WriteOutputFile(path, "first").ok());
  ASSERT_TRUE(WriteOutputFile(path, std::string("second\0bytes", 12)).ok());
  EXPECT_EQ(Contents(path), std::string("second\0bytes", 12));
  EXPECT_EQ(Entries(dir_), std::vector<std::string>{"report.txt"});
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);  // as a file written in place
  // A file replaced keeps its own mode, as one rewritten in place would.
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  ASSERT_TRUE(WriteOutputFile(path, "third").ok());
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Contents(path), "third");
  EXPECT_EQ(Entries(dir_), std::vector<std::string>{"report.txt"});
}

TEST_F(OutputFileTest, ThroughASymlinkTheFileItNamesIsReplaced) {
  const std::string target = dir_ + "/target.txt", link = dir_ + "/link.txt";
  ASSERT_TRUE(WriteOutputFile(target, "old").ok());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(WriteOutputFile(link, "new").ok());
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Contents(target), "new");
}

TEST_F(OutputFileTest, RefusalsNameThePathAndWhy) {
  absl::Status s = WriteOutputFile(dir_, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "cannot write '" + dir_ + "': a directory");
  s = WriteOutputFile("/proc/nope/r.html", "x");
  EXPECT_EQ(s.message(), "cannot write '/proc/nope/r.html': folder '/proc/nope': No such file or directory");
  EXPECT_EQ(CheckOutputPath(dir_ + "/fine.pt"), absl::OkStatus());
  EXPECT_EQ(CheckOutputPath(dir_).message(), "cannot write '" + dir_ + "': a directory");
}

TEST_F(OutputFileTest, DevicesAreWrittenStraightAndAFullDiskIsAnError) {
  EXPECT_EQ(WriteOutputFile("/dev/null", "discarded"), absl::OkStatus());
  // /dev/full: every write fails with ENOSPC, as a full disk would.
  absl::Status s = WriteOutputFile("/dev/full", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "cannot write '/dev/full': No space left on device");
}

TEST_F(OutputFileTest, AFifoNothingReadsIsRefusedNotWaitedOn) {
  const std::string fifo = dir_ + "/fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(WriteOutputFile(fifo, "x").message(),
            "cannot write '" + fifo + "': a FIFO that nothing reads");
}

}  // namespace
}  // namespace hpt
