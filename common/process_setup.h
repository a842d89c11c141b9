// Process-wide settings the service's binaries make first in main: the heap
// policy for large buffers and OpenMP's wait policy.
//
// The device models and the trainer allocate and free tensors of tens of
// megabytes per task. glibc serves each from a fresh mmap (its dynamic
// threshold stops at 32 MiB) and returns it with munmap, so every task
// faults in and zeroes its pages again: measured here on the wind preset's
// device evaluation, 147 s with 4 min of system time, against 81 s with the
// heap keeping them. Call once at the start of main.
#ifndef HPT_COMMON_LARGE_BUFFERS_H_
#define HPT_COMMON_LARGE_BUFFERS_H_

namespace hpt {

// Keeps large blocks on the heap (no mmap, trim threshold 1 GiB): freed
// buffers are reused, not unmapped.
void KeepLargeBuffersOnTheHeap();

// LibTorch's OpenMP threads spin after each parallel region by default.
// With a coordinator and workers sharing a machine's cores, those spins
// take the cores the other processes' work needs: measured here, a wind
// step through the coordinator and a worker took 1.86x a single-process
// step with spinning, 0.95x with OMP_WAIT_POLICY=passive. libgomp reads
// the variable when it loads, before main, so this re-executes the program
// with it set (once; a value the user set is kept). Call first in main.
void UsePassiveOpenMpWaits(char** argv);

}  // namespace hpt

#endif  // HPT_COMMON_LARGE_BUFFERS_H_
