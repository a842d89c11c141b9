// The kernels benchmarks/kernel_holdout times on a GPU to check the cost
// model out of sample: by class, shapes that hpt_calibrate never times
// (its grids' points have every dimension a power of two; here one at
// least is not, a batch aside, and no product is the wind model's).
// kernel_holdout_cases_test holds them apart from the calibration's.
#ifndef HPT_BENCHMARKS_KERNEL_HOLDOUT_CASES_H_
#define HPT_BENCHMARKS_KERNEL_HOLDOUT_CASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hpt {

enum class HoldoutClass { kGemm, kBatched, kLayerNorm, kSoftmax, kElementwise };

enum class HoldoutOp {
  kMm,                 // dims: m, k, n
  kLinear,             // dims: rows, in, out: x W^T + b (a linear layer)
  kBmm,                // dims: batch, m, k, n
  kLayerNorm,          // dims: rows, width
  kLayerNormBackward,  // dims: rows, width
  kSoftmax,            // dims: rows, width
  kSoftmaxBackward,    // dims: rows, width
  // Element-wise, dims: elements. Binary ops take two tensors; the scalar
  // forms (torch::add(x, 0.7) and so on) one tensor and a number.
  kAdd,
  kMul,
  kDiv,
  kPow,
  kAddScalar,
  kMulScalar,
  kDivScalar,
  kPowScalar,
  kMulInPlace,
  kRelu,
  kTanh,
  kGelu,
};

// How many of HoldoutCase::dims an op reads.
inline int DimsOf(HoldoutOp op) {
  switch (op) {
    case HoldoutOp::kMm:
    case HoldoutOp::kLinear:
      return 3;
    case HoldoutOp::kBmm:
      return 4;
    case HoldoutOp::kLayerNorm:
    case HoldoutOp::kLayerNormBackward:
    case HoldoutOp::kSoftmax:
    case HoldoutOp::kSoftmaxBackward:
      return 2;
    default:
      return 1;  // element-wise
  }
}

struct HoldoutCase {
  std::string name;  // unique: the CSV's key
  HoldoutClass kind;
  HoldoutOp op;
  int64_t dims[4];
  int reps;  // calls a timed graph holds, so that small kernels time above the replay's launch
};

inline const char* HoldoutClassName(HoldoutClass c) {
  switch (c) {
    case HoldoutClass::kGemm: return "gemm";
    case HoldoutClass::kBatched: return "batched";
    case HoldoutClass::kLayerNorm: return "layer-norm";
    case HoldoutClass::kSoftmax: return "softmax";
    case HoldoutClass::kElementwise: return "elementwise";
  }
  return "?";
}

inline const std::vector<HoldoutCase>& HoldoutCases() {
  using C = HoldoutClass;
  using O = HoldoutOp;
  static const std::vector<HoldoutCase> cases = {
      {"mm 24x320x1280", C::kGemm, O::kMm, {24, 320, 1280}, 40},
      {"mm 96x768x3072", C::kGemm, O::kMm, {96, 768, 3072}, 20},
      {"mm 300x1000x300", C::kGemm, O::kMm, {300, 1000, 300}, 20},
      {"mm 700x700x700", C::kGemm, O::kMm, {700, 700, 700}, 20},
      {"mm 1500x1200x1200", C::kGemm, O::kMm, {1500, 1200, 1200}, 10},
      {"mm 3000x384x96", C::kGemm, O::kMm, {3000, 384, 96}, 20},
      {"mm 6000x640x2400", C::kGemm, O::kMm, {6000, 640, 2400}, 5},
      {"mm 10x4000x10", C::kGemm, O::kMm, {10, 4000, 10}, 50},
      {"bmm 48000x12x16x12", C::kBatched, O::kBmm, {48000, 12, 16, 12}, 10},
      {"bmm 24000x24x32x24", C::kBatched, O::kBmm, {24000, 24, 32, 24}, 10},
      {"bmm 20000x60x48x60", C::kBatched, O::kBmm, {20000, 60, 48, 60}, 5},
      {"bmm 3000x100x96x100", C::kBatched, O::kBmm, {3000, 100, 96, 100}, 10},
      {"bmm 384x300x80x300", C::kBatched, O::kBmm, {384, 300, 80, 300}, 10},
      {"bmm 96x640x96x640", C::kBatched, O::kBmm, {96, 640, 96, 640}, 10},
      {"bmm 40x6x10x6", C::kBatched, O::kBmm, {40, 6, 10, 6}, 50},
      {"ln 3000x384", C::kLayerNorm, O::kLayerNorm, {3000, 384}, 20},
      {"ln 700x1280", C::kLayerNorm, O::kLayerNorm, {700, 1280}, 20},
      {"ln 50000x96", C::kLayerNorm, O::kLayerNorm, {50000, 96}, 10},
      {"ln 6000x768", C::kLayerNorm, O::kLayerNorm, {6000, 768}, 10},
      {"ln 200x3000", C::kLayerNorm, O::kLayerNorm, {200, 3000}, 20},
      {"ln 100000x48", C::kLayerNorm, O::kLayerNorm, {100000, 48}, 10},
      {"ln-bwd 3000x384", C::kLayerNorm, O::kLayerNormBackward, {3000, 384}, 20},
      {"ln-bwd 700x1280", C::kLayerNorm, O::kLayerNormBackward, {700, 1280}, 20},
      {"ln-bwd 50000x96", C::kLayerNorm, O::kLayerNormBackward, {50000, 96}, 10},
      {"ln-bwd 6000x768", C::kLayerNorm, O::kLayerNormBackward, {6000, 768}, 10},
      {"sm 100000x60", C::kSoftmax, O::kSoftmax, {100000, 60}, 10},
      {"sm 3000x300", C::kSoftmax, O::kSoftmax, {3000, 300}, 20},
      {"sm 40000x24", C::kSoftmax, O::kSoftmax, {40000, 24}, 20},
      {"sm 500x2000", C::kSoftmax, O::kSoftmax, {500, 2000}, 20},
      {"sm 20000x100", C::kSoftmax, O::kSoftmax, {20000, 100}, 10},
      // Rows past a warp's 2,048 (LibTorch 2.11: SoftmaxReadsRowOnce):
      // read once in a block's registers to 9,216 elements, whatever their
      // alignment (2560, 6400, 2501), and three times past that where they
      // do not fit 48 KiB of shared memory (12800).
      {"sm 6000x2560", C::kSoftmax, O::kSoftmax, {6000, 2560}, 5},
      {"sm 3000x6400", C::kSoftmax, O::kSoftmax, {3000, 6400}, 5},
      {"sm 1500x12800", C::kSoftmax, O::kSoftmax, {1500, 12800}, 5},
      {"sm 6000x2501", C::kSoftmax, O::kSoftmax, {6000, 2501}, 5},
      {"sm-bwd 100000x60", C::kSoftmax, O::kSoftmaxBackward, {100000, 60}, 10},
      {"sm-bwd 3000x300", C::kSoftmax, O::kSoftmaxBackward, {3000, 300}, 20},
      {"sm-bwd 500x2000", C::kSoftmax, O::kSoftmaxBackward, {500, 2000}, 20},
      {"add 30000", C::kElementwise, O::kAdd, {30000}, 50},
      {"add 700000", C::kElementwise, O::kAdd, {700000}, 20},
      {"add 20000000", C::kElementwise, O::kAdd, {20000000}, 5},
      {"mul_ 30000", C::kElementwise, O::kMulInPlace, {30000}, 50},
      {"mul_ 700000", C::kElementwise, O::kMulInPlace, {700000}, 20},
      {"mul_ 20000000", C::kElementwise, O::kMulInPlace, {20000000}, 5},
      {"gelu 30000", C::kElementwise, O::kGelu, {30000}, 50},
      {"gelu 3000000", C::kElementwise, O::kGelu, {3000000}, 10},
  };
  return cases;
}

// A case from its name, as HoldoutCases() spells them ("ln 3000x384",
// "bmm 48000x12x16x12": the op, then its dims joined by x), so that kernels
// measured elsewhere (published measurements) are priced by the same
// model. One call a timing (reps 1). An error names the part that does
// not parse.
inline absl::StatusOr<HoldoutCase> ParseHoldoutCase(const std::string& name) {
  using C = HoldoutClass;
  using O = HoldoutOp;
  struct Known {
    const char* op;
    HoldoutClass kind;
    HoldoutOp holdout_op;
  };
  static const Known kKnown[] = {
      {"mm", C::kGemm, O::kMm},
      {"linear", C::kGemm, O::kLinear},
      {"bmm", C::kBatched, O::kBmm},
      {"ln", C::kLayerNorm, O::kLayerNorm},
      {"ln-bwd", C::kLayerNorm, O::kLayerNormBackward},
      {"sm", C::kSoftmax, O::kSoftmax},
      {"sm-bwd", C::kSoftmax, O::kSoftmaxBackward},
      {"add", C::kElementwise, O::kAdd},
      {"mul", C::kElementwise, O::kMul},
      {"div", C::kElementwise, O::kDiv},
      {"pow", C::kElementwise, O::kPow},
      {"add-s", C::kElementwise, O::kAddScalar},
      {"mul-s", C::kElementwise, O::kMulScalar},
      {"div-s", C::kElementwise, O::kDivScalar},
      {"pow-s", C::kElementwise, O::kPowScalar},
      {"mul_", C::kElementwise, O::kMulInPlace},
      {"relu", C::kElementwise, O::kRelu},
      {"tanh", C::kElementwise, O::kTanh},
      {"gelu", C::kElementwise, O::kGelu},
  };
  const std::vector<std::string> parts = absl::StrSplit(name, ' ');
  const Known* known = nullptr;
  for (const Known& k : kKnown) {
    if (!parts.empty() && parts[0] == k.op) known = &k;
  }
  if (known == nullptr || parts.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("case '", name,
                     "': want an op (mm, linear, bmm, ln, ln-bwd, sm, sm-bwd, add, mul, div, pow, "
                     "add-s, mul-s, div-s, pow-s, mul_, relu, tanh, gelu), a space, then its "
                     "dims joined by x"));
  }
  const std::vector<std::string> dims = absl::StrSplit(parts[1], 'x');
  HoldoutCase c{name, known->kind, known->holdout_op, {0, 0, 0, 0}, 1};
  if (int(dims.size()) != DimsOf(known->holdout_op)) {
    return absl::InvalidArgumentError(absl::StrCat("case '", name, "': ", known->op, " takes ",
                                                   DimsOf(known->holdout_op), " dims, got ",
                                                   dims.size()));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!absl::SimpleAtoi(dims[i], &c.dims[i]) || c.dims[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("case '", name, "': dim '", dims[i], "' is not a whole number >= 1"));
    }
  }
  return c;
}

}  // namespace hpt

#endif  // HPT_BENCHMARKS_KERNEL_HOLDOUT_CASES_H_
