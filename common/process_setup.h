// Process-wide settings the service's binaries make first in main: the heap
// policy for large buffers and how idle compute threads wait.
//
// The device models and the trainer allocate and free tensors of tens of
// megabytes per task. glibc serves each from a fresh mmap (its dynamic
// threshold stops at 32 MiB) and returns it with munmap, so every task
// faults in and zeroes its pages again: measured here on the wind preset's
// device evaluation, 147 s with 4 min of system time, against 81 s with the
// heap keeping them. Smaller ones fault too: below the threshold, glibc
// trims the heap's freed top after each step and faults it in again on the
// next (tiny preset, batch 64: 54 faults a step). Measured on a 2-vCPU VM
// after a long build had freed its memory: 4.9 us of system time a fault;
// in a CI run there, such steps took 1.4x their usual time. On that VM, too, buffers of 134-537 MB
// in fresh mappings streamed at 6.4-6.9 GB/s, on the heap at 21-37 GB/s
// (hpt_calibrate's element-wise curve). Call once at the start of main.
#ifndef HPT_COMMON_PROCESS_SETUP_H_
#define HPT_COMMON_PROCESS_SETUP_H_

namespace hpt {

// Keeps large blocks on the heap (no mmap, trim threshold 1 GiB): freed
// buffers are reused, not unmapped.
void KeepLargeBuffersOnTheHeap();

// How idle compute threads wait, for processes that share a machine's
// cores. LibTorch's OpenMP (libgomp) threads spin after each parallel
// region: 300,000 pauses by default, milliseconds, which took the cores a
// coordinator's and a worker's work needed (a wind step through both was
// 1.86x a single-process step with LibTorch 2). Sleeping at once
// (OMP_WAIT_POLICY=passive) costs a futex wake on every parallel op
// instead: measured 2026-11-24 on a 2-vCPU AMD EPYC VM (torch 2.12.1),
// steps took 1.5x (wind b1) to 5x (tiny b4) their spinning time. So the
// threads spin briefly, GOMP_SPINCOUNT=10000 (0.24 ms at the 23.6 ns a
// pause took there): longer than the host's gaps between one op and the
// next (1,000 pauses, 24 us, left tiny b64 1.5x slower), far shorter than
// the spells between a worker's tasks. Same run: wind b1 0.095 s a step,
// 0.165 s passive; coordinator + worker over one step 1.08x of a single
// process (passive 0.91x, of a slower step). OpenBLAS's threads (the device
// models' GEMMs) likewise call sched_yield in a loop for 2^28 cycles after
// each call before they sleep; OPENBLAS_THREAD_TIMEOUT=4 (its minimum, 2^4
// cycles) makes them sleep at once. Both libraries read their variable
// when they load, before main, so this re-executes the program with them
// set (once; values the user set are kept, and OMP_WAIT_POLICY set by
// the user leaves the spin count alone). Call first in main.
void UseShortThreadSpins(char** argv);

}  // namespace hpt

#endif  // HPT_COMMON_PROCESS_SETUP_H_
