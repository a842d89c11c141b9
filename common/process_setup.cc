#include "common/process_setup.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>

namespace hpt {

void KeepLargeBuffersOnTheHeap() {
  // M_MMAP_THRESHOLD cannot go past 32 MiB through mallopt (and setting it
  // freezes the dynamic threshold), so mmap is turned off instead: every
  // block comes from the heap, and the heap is trimmed only past 1 GiB free.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void UsePassiveOpenMpWaits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
  // Could not re-execute: go on with the default policy.
}

}  // namespace hpt
