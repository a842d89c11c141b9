// Process-wide settings the service's binaries make first in main: the heap
// policy for large buffers and how idle compute threads wait.
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
// step with spinning, 0.95x with OMP_WAIT_POLICY=passive. OpenBLAS's
// threads (the device models' GEMMs) likewise call sched_yield in a loop
// for 2^28 cycles after each call before they sleep; OPENBLAS_THREAD_TIMEOUT
// =4 (its minimum, 2^4 cycles) makes them sleep at once. Both libraries
// read their variable when they load, before main, so this re-executes the
// program with them set (once; values the user set are kept). Call first
// in main.
void UsePassiveThreadWaits(char** argv);

}  // namespace hpt

#endif  // HPT_COMMON_LARGE_BUFFERS_H_
