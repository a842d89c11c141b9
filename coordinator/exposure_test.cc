#include "coordinator/exposure.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

TEST(ExposureTest, LoopbackIsSafeWithoutCredentials) {
  for (const char* listen : {"127.0.0.1:50051", "localhost:1", "[::1]:2", "127.3.4.5:0"}) {
    EXPECT_EQ(ExposureWarning({listen, "", false, false}), std::nullopt) << listen;
  }
}

TEST(ExposureTest, EveryInterfaceWithoutTlsOrTokensWarnsWithWhatAnyoneCanDo) {
  std::optional<std::string> w = ExposureWarning({"0.0.0.0:50051", "", false, false});
  ASSERT_TRUE(w.has_value());
  EXPECT_THAT(*w, HasSubstr("reachable on 0.0.0.0 without TLS or tokens"));
  EXPECT_THAT(*w, HasSubstr("submit, list, cancel and export"));
  EXPECT_THAT(*w, HasSubstr("docs/security.md"));
}

TEST(ExposureTest, NamesWhatIsMissing) {
  EXPECT_THAT(*ExposureWarning({"10.0.0.5:1", "", true, false}), HasSubstr("without tokens"));
  EXPECT_THAT(*ExposureWarning({"10.0.0.5:1", "", false, true}), HasSubstr("without TLS"));
  EXPECT_EQ(ExposureWarning({"10.0.0.5:1", "", true, true}), std::nullopt);
}

TEST(ExposureTest, APublishedAddressCountsInsteadOfTheContainersListenAddress) {
  // docker-compose: the coordinator listens on 0.0.0.0 in its container;
  // the host publishes the port on HPT_BIND.
  EXPECT_EQ(ExposureWarning({"0.0.0.0:50051", "127.0.0.1", false, false}), std::nullopt);
  std::optional<std::string> w = ExposureWarning({"0.0.0.0:50051", "0.0.0.0", false, false});
  ASSERT_TRUE(w.has_value());
  EXPECT_THAT(*w, HasSubstr("reachable on 0.0.0.0"));
  // ./hpt up and tests: loopback, however it is published.
  EXPECT_THAT(*ExposureWarning({"127.0.0.1:0", "192.168.1.7", false, false}),
              HasSubstr("reachable on 192.168.1.7"));
}

}  // namespace
}  // namespace hpt
