// How a GPU worker launches a run's steps (proto/common.proto's Launch):
// the mode a request, a run's result and the report use, with
// LAUNCH_UNSPECIFIED (and any number no mode has) read as eager, and each
// mode's name as reports and flags write it.
//
//   run.launch = LaunchOrEager(request.launch());
//   out += LaunchName(dispatch.launch());  // "eager" for a job before any run
#ifndef HPT_COMMON_LAUNCH_MODE_H_
#define HPT_COMMON_LAUNCH_MODE_H_

#include <string>

#include "proto/common.pb.h"

namespace hpt {

// `mode`, with LAUNCH_UNSPECIFIED (and any number no mode has) read as eager.
Launch::Mode LaunchOrEager(Launch::Mode mode);

// "eager" or "graph", for LaunchOrEager(mode).
const std::string& LaunchName(Launch::Mode mode);

}  // namespace hpt

#endif  // HPT_COMMON_LAUNCH_MODE_H_
