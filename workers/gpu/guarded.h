// A GPU worker's tasks run LibTorch, which reports failures by throwing.
// Guarded runs one and turns what it throws into a status:
//
//   return Guarded("forward", [&]() -> absl::StatusOr<Tensor> { ... });
#ifndef HPT_WORKERS_GPU_GUARDED_H_
#define HPT_WORKERS_GPU_GUARDED_H_

#include <c10/util/Exception.h>

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hpt {

// Runs `fn`, turning LibTorch exceptions into errors so a bad task never
// takes the worker down: running out of device or host memory is
// RESOURCE_EXHAUSTED with the fix (the job fails with those words rather
// than failing over onto the same wall), anything else INTERNAL.
template <typename Fn>
inline auto Guarded(const char* what, Fn&& fn) -> decltype(fn()) {
  constexpr char kFix[] =
      ": lower training.batch_size, or the model's size (model.d_model, "
      "model.num_layers)";
  try {
    return fn();
  } catch (const c10::OutOfMemoryError& e) {
    const std::string said = e.what_without_backtrace();
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": the device ran out of memory", kFix,
                     " (LibTorch: ", said.substr(0, said.find('\n')), ")"));
  } catch (const c10::Error& e) {
    const std::string said = e.what_without_backtrace();
    // The CPU allocator's "DefaultCPUAllocator: not enough memory: ..." is
    // a plain c10::Error.
    if (said.find("not enough memory") != std::string::npos) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": the worker's host ran out of memory", kFix,
                       " (LibTorch: ", said.substr(0, said.find('\n')), ")"));
    }
    return absl::InternalError(absl::StrCat(what, " failed in LibTorch: ", said));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": the worker's host ran out of memory", kFix));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, " failed: ", e.what()));
  }
}

}  // namespace hpt

#endif  // HPT_WORKERS_GPU_GUARDED_H_
