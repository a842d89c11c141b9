// A request's text checked before it is sent: protobuf's strings must be
// UTF-8, and a request with one that is not reaches the coordinator as
// damaged bytes it refuses whole, naming nothing. hptctl checks each
// request with this first, so that the person hears which field it was.
#ifndef HPT_HPTCTL_REQUEST_TEXT_H_
#define HPT_HPTCTL_REQUEST_TEXT_H_

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace hpt {

// INVALID_ARGUMENT naming the first string field of `request` (nested
// messages included) that is not UTF-8 text; OK otherwise.
absl::Status CheckRequestText(const google::protobuf::Message& request);

}  // namespace hpt

#endif  // HPT_HPTCTL_REQUEST_TEXT_H_
