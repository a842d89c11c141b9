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

namespace {

// Sets `name` to `value` unless the user set it, or set `chosen_instead`
// (a variable that decides the same thing); true when it did.
bool SetUnlessChosen(const char* name, const char* value, const char* chosen_instead = nullptr) {
  if (std::getenv(name) != nullptr) return false;
  if (chosen_instead != nullptr && std::getenv(chosen_instead) != nullptr) return false;
  setenv(name, value, 1);
  return true;
}

}  // namespace

void UseShortThreadSpins(char** argv) {
  // libgomp lets a spin count override the wait policy, so a policy the
  // user chose leaves the spin count unset.
  const bool spins = SetUnlessChosen("GOMP_SPINCOUNT", "10000", "OMP_WAIT_POLICY");
  const bool blas = SetUnlessChosen("OPENBLAS_THREAD_TIMEOUT", "4");
  if (!spins && !blas) return;
  execv("/proc/self/exe", argv);
  // Could not re-execute: go on with the default policies.
}

}  // namespace hpt
