#include "coordinator/spec/spec_names.h"

#include <gtest/gtest.h>

namespace hpt {
namespace {

TEST(SpecNamesTest, RenamesOldFieldsInTheirMessagesOnly) {
  EXPECT_EQ(UpgradeJobSpecText("data { window: 24 horizon: 2 }"),
            "data { input_steps: 24 horizon: 2 }");
  EXPECT_EQ(UpgradeJobSpecText("hpt {\n  window: 480\n  window_steps: 15\n}"),
            "hpt {\n  check_window_samples: 480\n  check_window_steps: 15\n}");
  EXPECT_EQ(UpgradeJobSpecText("hpt: < window: 7 >"), "hpt: < check_window_samples: 7 >");
  // Nested deeper, at the top level, in strings and comments: untouched.
  EXPECT_EQ(UpgradeJobSpecText("hpt { lora { window: 1 } }"), "hpt { lora { window: 1 } }");
  EXPECT_EQ(UpgradeJobSpecText("window: 1"), "window: 1");
  EXPECT_EQ(UpgradeJobSpecText("name: \"data { window: 1 }\" # hpt { window: 2 }\n"),
            "name: \"data { window: 1 }\" # hpt { window: 2 }\n");
  EXPECT_EQ(UpgradeJobSpecText("data { csv { path: 'window' } window: 3 }"),
            "data { csv { path: 'window' } input_steps: 3 }");
  // New names and values that look like names stay as they are.
  EXPECT_EQ(UpgradeJobSpecText("data { input_steps: 3 } hpt { mode: \"full\" }"),
            "data { input_steps: 3 } hpt { mode: \"full\" }");
}

TEST(SpecNamesTest, GivesTextItCannotFollowBackUnchanged) {
  for (const char* text : {"data { window: 3", "data { window: \"3 }", "} data { window: 3 }"}) {
    EXPECT_EQ(UpgradeJobSpecText(text), text) << text;
  }
}

}  // namespace
}  // namespace hpt
