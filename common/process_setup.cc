#include "common/process_setup.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>

namespace hpt {

void KeepLargeBuffersOnTheHeap() {
  // M_MMAP_THRESHOLD cannot go past 32 MiB through mallopt (and setting it
  // freezes the dynamic threshold), so mmap is turned off instead: every
  // block comes from the heap, and the heap is trimmed only past 1 GiB free.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void UseShortThreadSpins(char** argv) {
  bool changed = false;
  for (const auto& [name, value] : {std::pair<const char*, const char*>{"GOMP_SPINCOUNT", "10000"},
                                    {"OPENBLAS_THREAD_TIMEOUT", "4"}}) {
    if (std::getenv(name) != nullptr) continue;
    // A wait policy the user chose stands: libgomp would let the spin
    // count override it.
    if (std::string(name) == "GOMP_SPINCOUNT" && std::getenv("OMP_WAIT_POLICY") != nullptr) {
      continue;
    }
    setenv(name, value, 1);
    changed = true;
  }
  if (!changed) return;
  execv("/proc/self/exe", argv);
  // Could not re-execute: go on with the default policies.
}

}  // namespace hpt
