#include "common/user_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/test_util.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

class UserFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    return testing::WriteTestFile(dir_, name, bytes);
  }
  const std::string dir_ = testing::MakeTempDir("user_file_test");
};

TEST_F(UserFileTest, ReadsARegularFileWhole) {
  const std::string path = Write("a.txt", "name = x\nfp32_flops = 1\n");
  absl::StatusOr<std::string> text = ReadUserTextFile(path, 1024);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "name = x\nfp32_flops = 1\n");
  EXPECT_EQ(ReadUserFile(path, 24).value().size(), 24u);  // exactly at the limit
}

TEST_F(UserFileTest, RefusesWhatIsNotARegularFileWithoutBlocking) {
  absl::Status dir = ReadUserFile(dir_, 1024).status();
  EXPECT_EQ(dir.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dir.message().find("a directory, not a regular file"), std::string::npos) << dir;
  // A FIFO with no writer: open must not wait for one.
  const std::string fifo = dir_ + "/fifo";
  unlink(fifo.c_str());  // from an earlier run outside Bazel
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  absl::Status f = ReadUserFile(fifo, 1024).status();
  EXPECT_NE(f.message().find("a FIFO, not a regular file"), std::string::npos) << f;
  absl::Status dev = ReadUserFile("/dev/zero", 1024).status();
  EXPECT_NE(dev.message().find("a device, not a regular file"), std::string::npos) << dev;
  absl::Status missing = ReadUserFile(dir_ + "/nope", 1024).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("no such file"), std::string::npos) << missing;
}

TEST_F(UserFileTest, RefusesAFileOverTheLimitNamingSizeAndLimit) {
  const std::string path = Write("big", std::string(2000, 'a'));
  absl::Status s = ReadUserFile(path, 1999).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), path + ": 2000 bytes, over the limit of 1999");
}

TEST_F(UserFileTest, ReadsToTheEndNotToTheSizeStatGave) {
  // /proc files stat as 0 bytes: what is there is read whole, and the limit
  // still holds past the size stat gave.
  absl::StatusOr<std::string> status = ReadUserFile("/proc/self/status", 1 << 20);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_NE(status->find("Name:"), std::string::npos);
  absl::Status s = ReadUserFile("/proc/self/status", 10).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "/proc/self/status: over the limit of 10 bytes");
}

TEST_F(UserFileTest, OptionsRefuseASymlinkNameThePathAndStopBetweenReads) {
  const std::string target = Write("target", std::string(100, 'a'));
  const std::string link = dir_ + "/link";
  unlink(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ReadFileOptions options;
  options.no_follow = true;
  options.shown_as = "data/x.csv";
  absl::Status s = ReadUserFile(link, 1024, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "cannot open 'data/x.csv': a symlink");
  EXPECT_EQ(ReadUserFile(target, 10, options).status().message(),
            "data/x.csv: 100 bytes, over the limit of 10");

  int asked = 0;
  options.before_read = [&] { ++asked; return absl::OkStatus(); };
  EXPECT_EQ(ReadUserFile(target, 1024, options).value(), std::string(100, 'a'));
  EXPECT_EQ(asked, 2);  // the read that fills it and the one that finds the end
  options.before_read = [] { return absl::CancelledError("stop"); };
  EXPECT_EQ(ReadUserFile(target, 1024, options).status(), absl::CancelledError("stop"));
}

TEST_F(UserFileTest, TextWithNulOrBadUtf8NamesTheLineNotTheContents) {
  const std::string secret = "hunter2-secret";
  const std::string nul = Write("nul", secret + "\nok\n" + std::string("x\0y", 3));
  absl::Status s = ReadUserTextFile(nul, 1024).status();
  EXPECT_EQ(s.message(), nul + ": not a text file (line 3 holds a NUL byte)");
  const std::string bad = Write("bad", secret + "\n\xff\xfe");
  s = ReadUserTextFile(bad, 1024).status();
  EXPECT_EQ(s.message(), bad + ": not a text file (line 2 holds bytes that are not UTF-8)");
  EXPECT_EQ(s.message().find(secret), std::string::npos);
  // Binary files are fine where text is not asked for.
  EXPECT_TRUE(ReadUserFile(bad, 1024).ok());
}

TEST(FirstNonTextByte, AcceptsUtf8AndFindsEachKindOfBadSequence) {
  EXPECT_EQ(FirstNonTextByte(""), absl::string_view::npos);
  EXPECT_EQ(FirstNonTextByte("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), absl::string_view::npos);
  EXPECT_EQ(FirstNonTextByte("ab\x80"), 2u);              // a stray continuation byte
  EXPECT_EQ(FirstNonTextByte("a\xc3"), 1u);               // truncated at the end
  EXPECT_EQ(FirstNonTextByte("a\xc3(b"), 1u);             // a lead byte without its tail
  EXPECT_EQ(FirstNonTextByte("\xc0\xaf"), 0u);            // overlong '/'
  EXPECT_EQ(FirstNonTextByte("\xe0\x80\xaf"), 0u);        // overlong, three bytes
  EXPECT_EQ(FirstNonTextByte("x\xed\xa0\x80"), 1u);       // a UTF-16 surrogate
  EXPECT_EQ(FirstNonTextByte("\xf4\x90\x80\x80"), 0u);    // past U+10FFFF
  EXPECT_EQ(FirstNonTextByte(absl::string_view("ab\0", 3)), 2u);
}

}  // namespace
}  // namespace hpt
