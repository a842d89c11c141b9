#include "cost/record_costing.h"

#include <map>
#include <string>
#include <tuple>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(LinkFromSettingsTest, ReadsTheRecordsLinkAndKeepsDefaultsForWhatItLacks) {
  absl::StatusOr<InterconnectConfig> link =
      LinkFromSettings({{"interconnect_gb_per_s", "64"}, {"interconnect_latency_us", "0"}});
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_DOUBLE_EQ(link->bandwidth_bytes_per_s, 64e9);
  EXPECT_DOUBLE_EQ(link->latency_s, 0);
  EXPECT_DOUBLE_EQ(link->energy_per_byte_j, InterconnectConfig().energy_per_byte_j);
}

// A damaged record names the setting, its value and both ways out; it is
// never read as the default.
TEST(LinkFromSettingsTest, RefusesAStoredValueThatIsNotANumberInRange) {
  for (const auto& [key, value, want] : {std::tuple<std::string, std::string, std::string>{
                                             "interconnect_gb_per_s", "fast", "positive"},
                                         {"interconnect_gb_per_s", "0", "positive"},
                                         {"interconnect_latency_us", "-1", "non-negative"},
                                         {"interconnect_pj_per_byte", "nan", "non-negative"},
                                         {"interconnect_pj_per_byte", "inf", "non-negative"}}) {
    absl::StatusOr<InterconnectConfig> link = LinkFromSettings({{key, value}});
    ASSERT_FALSE(link.ok()) << key << "=" << value;
    EXPECT_EQ(link.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(link.status().message(),
              "the work record's setting " + key + "='" + value + "' is not a " + want +
                  " number; the coordinator writes numbers there, so the record was edited or "
                  "damaged: restore it, or override it: hptctl whatif JOB --set " +
                  key + "=N");
  }
}

}  // namespace
}  // namespace hpt
