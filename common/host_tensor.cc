#include "common/host_tensor.h"

#include "absl/strings/str_join.h"

namespace hpt {

std::string HostTensor::ShapeString() const {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

}  // namespace hpt
