#include "common/large_buffers.h"

#include <malloc.h>

namespace hpt {

void KeepLargeBuffersOnTheHeap() {
  // M_MMAP_THRESHOLD cannot go past 32 MiB through mallopt (and setting it
  // freezes the dynamic threshold), so mmap is turned off instead: every
  // block comes from the heap, and the heap is trimmed only past 1 GiB free.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace hpt
