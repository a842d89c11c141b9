#include "hptctl/request_text.h"

#include "gtest/gtest.h"
#include "proto/job_service.pb.h"

namespace hpt {
namespace {

TEST(CheckRequestText, PassesUtf8AndNamesTheFieldThatIsNot) {
  SubmitJobRequest request;
  request.mutable_spec()->set_name("caf\xc3\xa9 wind");
  EXPECT_TRUE(CheckRequestText(request).ok());
  request.mutable_spec()->set_name("n\xffx");
  absl::Status s = CheckRequestText(request);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "JobSpec.name is not UTF-8 text (at byte 2): give it as UTF-8");
}

TEST(CheckRequestText, NamesTheEntryOfARepeatedField) {
  WhatIfRequest request;
  request.set_job_id("job-000001");
  request.add_settings("systolic_rows=64");
  request.add_settings("systolic_cols=\xc3");
  EXPECT_EQ(CheckRequestText(request).message(),
            "WhatIfRequest.settings[1] is not UTF-8 text (at byte 15): give it as UTF-8");
  GetJobRequest get;
  get.set_job_id("job-\xed\xa0\x80");  // a surrogate
  EXPECT_EQ(CheckRequestText(get).message(),
            "GetJobRequest.job_id is not UTF-8 text (at byte 5): give it as UTF-8");
}

}  // namespace
}  // namespace hpt
