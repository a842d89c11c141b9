#include "common/launch_mode.h"

namespace hpt {

Launch::Mode LaunchOrEager(Launch::Mode mode) {
  if (mode == Launch::LAUNCH_UNSPECIFIED || !Launch::Mode_IsValid(mode)) return Launch::eager;
  return mode;
}

const std::string& LaunchName(Launch::Mode mode) { return Launch::Mode_Name(LaunchOrEager(mode)); }

}  // namespace hpt
