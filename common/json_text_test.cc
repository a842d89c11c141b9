#include "common/json_text.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(JsonString("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(JsonString("line\nnext"), "\"line\\nnext\"");
  EXPECT_EQ(JsonString(std::string("tab\t\x01", 5)), "\"tab\\u0009\\u0001\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 as it is
}

}  // namespace
}  // namespace hpt
