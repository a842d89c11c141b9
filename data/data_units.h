// Values between the data's own units and the model's: each station
// z-scored with its training rows' mean and standard deviation
// (proto/common.proto DataUnits, data/window_dataset.h), token by token.
// The last dimension is the features of a token, the one before it the
// tokens (the stations, in order).
//
//   RETURN_IF_ERROR(ToModelUnits(units, &input));   // [.., tokens, steps]
//   ... the model ...
//   ToDataUnits(units, &output);                     // [.., tokens, 1]
#ifndef HPT_DATA_DATA_UNITS_H_
#define HPT_DATA_DATA_UNITS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/host_tensor.h"
#include "proto/common.pb.h"

namespace hpt {

// (x - mean) / sd per token. INVALID_ARGUMENT when `t` is not at least
// [tokens, features] with as many tokens as `units` has stations.
absl::Status ToModelUnits(const DataUnits& units, HostTensor* t);
// y * sd + mean per token (the inverse), on a tensor of the same layout.
absl::Status ToDataUnits(const DataUnits& units, HostTensor* t);

// Header cells that end in a unit, "Pullman (°C)" or "Pullman [degC]":
// strips it from each name and returns it when every cell gives the same
// one; otherwise leaves the names and returns "".
std::string TakeCommonUnit(std::vector<std::string>* names);

}  // namespace hpt

#endif  // HPT_DATA_DATA_UNITS_H_
