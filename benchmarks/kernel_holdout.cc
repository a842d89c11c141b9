// kernel_holdout: single kernels of shapes the calibration never measures,
// timed on a real GPU and priced by the cost model, by kernel class (GEMM,
// batched products, layer norm, softmax, element-wise).
//
// Measure (on a CUDA device): each case's op repeated `reps` times is
// captured as a CUDA graph and replayed (DeviceBestS, the least of
// --runs), and the replay's time over `reps` is the measured time a call:
// the kernels' device time and each graph node's gap, as a captured step
// pays them. The ATen ops the call ran are listed beside it.
//
//   kernel_holdout --measure_on=cuda:0 --out=h200-holdout.csv
//
// Compare (anywhere): each case's kernels are recorded here (on the CPU:
// the recorder sees shapes, not values) and priced on every --gpu profile
// under graph launch, one call's kernels; the table gives each class's
// median |model / measured - 1| and the geometric mean of model / measured.
//
//   kernel_holdout --measured=h200-holdout.csv --gpu=v100,a100,h100,cuda0.profile
//
// Its CPU twin (--model_csv=GPU): the CSV written with GPU's model times in
// place of measured ones, which a comparison on GPU must find exact.
//
// The cases (HoldoutCases()) avoid every shape hpt_calibrate times: its
// product grids' axes are powers of two from 8 to 2048, its wind product
// is 57 x 1536 x 512, and its norm grid's rows and widths are powers of
// two and 57 x 512; here every shape has a dimension (a batch aside) that
// is not a power of two, and none is the wind model's.
// Exit codes: 0; 1 with --check when a class is off by more than
// --tolerance; 2 bad flags or an unreadable file; 3 no CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/kernel_holdout_cases.h"
#include "benchmarks/kernel_holdout_compare.h"
#include "common/process_setup.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/gpu/roofline.h"
#include "workers/calibrate/best_time.h"
#include "workers/gpu/cuda_timing.h"
#include "workers/gpu/kernel_recorder.h"

ABSL_FLAG(std::string, measure_on, "", "Time the cases on this CUDA device (cuda:N).");
ABSL_FLAG(std::string, out, "kernel-holdout.csv", "With --measure_on: the CSV written.");
ABSL_FLAG(int, runs, 5, "With --measure_on: graph replays a case; the least is kept.");
ABSL_FLAG(std::string, measured, "", "Compare: a CSV that --measure_on wrote.");
ABSL_FLAG(std::string, model_csv, "",
          "Write --out as --measure_on would, with this GPU profile's model times in place of "
          "measured ones (the comparison's CPU twin: it must then find no error).");
ABSL_FLAG(std::string, gpu, "v100,a100,h100",
          "Compare: GPU presets or profile files, comma-separated.");
ABSL_FLAG(std::string, measured_as, "graph",
          "Compare: what --measured timed. graph: a call's share of a captured graph's replay "
          "(kernel_holdout --measure_on); kernel: each kernel's own device time, no graph "
          "node and no launch (a profiler's kernel durations); event: one call from Python "
          "on an idle GPU between two CUDA events, its host's time to the first launch "
          "included (NeuSight's published latencies).");
ABSL_FLAG(double, tolerance, 0.15, "Largest median |model / measured - 1| --check accepts.");
ABSL_FLAG(bool, check, false, "Exit 1 when a class's median error is above --tolerance.");

namespace hpt {
namespace {

// The inputs of a case and the op it times, once.
struct CaseBody {
  std::vector<torch::Tensor> in;
  std::function<void()> call;
};

// An element-wise op on `in` (x, and y for the ops of two tensors); the
// forms with a number take 0.7, which no op special-cases.
std::function<void()> ElementwiseCall(HoldoutOp op, std::vector<torch::Tensor> in) {
  switch (op) {
    case HoldoutOp::kAdd:
      return [in] { torch::add(in[0], in[1]); };
    case HoldoutOp::kMul:
      return [in] { torch::mul(in[0], in[1]); };
    case HoldoutOp::kDiv:
      return [in] { torch::div(in[0], in[1]); };
    case HoldoutOp::kPow:
      return [in] { torch::pow(in[0], in[1]); };
    case HoldoutOp::kAddScalar:
      return [in] { torch::add(in[0], 0.7); };
    case HoldoutOp::kMulScalar:
      return [in] { torch::mul(in[0], 0.7); };
    case HoldoutOp::kDivScalar:
      return [in] { torch::div(in[0], 0.7); };
    case HoldoutOp::kPowScalar:
      return [in] { torch::pow(in[0], 0.7); };
    case HoldoutOp::kMulInPlace:
      return [in]() mutable { in[0].mul_(1.0); };
    case HoldoutOp::kRelu:
      return [in] { torch::relu(in[0]); };
    case HoldoutOp::kTanh:
      return [in] { torch::tanh(in[0]); };
    case HoldoutOp::kGelu:
      return [in] { torch::gelu(in[0]); };
    default:
      return nullptr;  // not element-wise: MakeBody's other cases
  }
}

CaseBody MakeBody(const HoldoutCase& c, const torch::Device& device) {
  const auto opts = torch::TensorOptions().device(device);
  const int64_t* d = c.dims;
  CaseBody b;
  switch (c.op) {
    case HoldoutOp::kMm:  // m, k, n
      b.in = {torch::randn({d[0], d[1]}, opts), torch::randn({d[1], d[2]}, opts)};
      b.call = [in = b.in] { torch::mm(in[0], in[1]); };
      break;
    case HoldoutOp::kLinear:  // rows, in, out
      b.in = {torch::randn({d[0], d[1]}, opts), torch::randn({d[2], d[1]}, opts),
              torch::randn({d[2]}, opts)};
      b.call = [in = b.in] { torch::linear(in[0], in[1], in[2]); };
      break;
    case HoldoutOp::kBmm:  // batch, m, k, n
      b.in = {torch::randn({d[0], d[1], d[2]}, opts), torch::randn({d[0], d[2], d[3]}, opts)};
      b.call = [in = b.in] { torch::bmm(in[0], in[1]); };
      break;
    case HoldoutOp::kLayerNorm:  // rows, width
    case HoldoutOp::kLayerNormBackward: {
      torch::Tensor x = torch::randn({d[0], d[1]}, opts);
      torch::Tensor w = torch::ones({d[1]}, opts), bias = torch::zeros({d[1]}, opts);
      auto [y, mean, rstd] = torch::native_layer_norm(x, {d[1]}, w, bias, 1e-5);
      b.in = {x, w, bias, torch::randn_like(x), mean, rstd};
      if (c.op == HoldoutOp::kLayerNorm) {
        b.call = [in = b.in, n = d[1]] {
          torch::native_layer_norm(in[0], {n}, in[1], in[2], 1e-5);
        };
      } else {
        b.call = [in = b.in, n = d[1]] {
          torch::native_layer_norm_backward(in[3], in[0], {n}, in[4], in[5], in[1], in[2],
                                            {true, true, true});
        };
      }
      break;
    }
    case HoldoutOp::kSoftmax:  // rows, width
    case HoldoutOp::kSoftmaxBackward: {
      torch::Tensor x = torch::randn({d[0], d[1]}, opts);
      b.in = {x, torch::_softmax(x, -1, false), torch::randn_like(x)};
      if (c.op == HoldoutOp::kSoftmax) {
        b.call = [in = b.in] { torch::_softmax(in[0], -1, false); };
      } else {
        b.call = [in = b.in] {
          torch::_softmax_backward_data(in[2], in[1], -1, in[0].scalar_type());
        };
      }
      break;
    }
    default: {  // element-wise: x, and y for an op of two tensors
      b.in = {torch::randn({d[0]}, opts)};
      if (c.op == HoldoutOp::kAdd || c.op == HoldoutOp::kMul || c.op == HoldoutOp::kDiv ||
          c.op == HoldoutOp::kPow) {
        b.in.push_back(torch::randn({d[0]}, opts));
      }
      b.call = ElementwiseCall(c.op, b.in);
      break;
    }
  }
  return b;
}

// The ATen ops one call runs, as the recorder sees them.
std::vector<GpuKernel> Record(const CaseBody& body) {
  torch::NoGradGuard no_grad;
  KernelRecorder recorder;
  body.call();
  return recorder.Finish();
}

// Elements a case's recording allocates at most: a published case may
// move gigabytes, which this machine need not hold to record its kernels.
constexpr int64_t kRecordElements = int64_t(1) << 22;

// A case's kernels as the recorder sees them at its full size. A product
// (mm, linear, bmm) is recorded on the meta device, where its ops dispatch
// as on the CPU and report their shapes but hold no data: a published
// 1024 x 960 x 50272 product records in microseconds, where the CPU ran
// it on its full weight (kernel_holdout_test's twin sets a model CSV
// recorded on the CPU against this recording). The other ops go on the
// CPU, since not all dispatch alike on meta (native_layer_norm falls to
// its composite form there). Past kRecordElements such a case is
// recorded at two sizes of its first dim (rows or elements) and each
// kernel's FLOPs, bytes and shape are carried to the full size along the
// line through the two: exact for the affine counts these ops have (the
// rows' bytes plus a parameter's). An error where the two recordings
// differ in their kernels.
absl::StatusOr<std::vector<GpuKernel>> RecordAtSize(const HoldoutCase& c) {
  if (c.kind == HoldoutClass::kGemm || c.kind == HoldoutClass::kBatched) {
    return Record(MakeBody(c, torch::Device(torch::kMeta)));
  }
  const torch::Device cpu(torch::kCPU);
  const int64_t d0 = c.dims[0];
  // Elements of the largest operand a unit of d0.
  const int64_t inner = c.kind == HoldoutClass::kElementwise ? 1 : c.dims[1];
  const int64_t small = std::max<int64_t>(1, kRecordElements / std::max<int64_t>(inner, 1) / 2);
  if (d0 <= 2 * small) return Record(MakeBody(c, cpu));
  HoldoutCase one = c, two = c;
  one.dims[0] = small;
  two.dims[0] = 2 * small;
  const std::vector<GpuKernel> a = Record(MakeBody(one, cpu)), b = Record(MakeBody(two, cpu));
  if (a.size() != b.size()) {
    return absl::InternalError(absl::StrCat("case '", c.name, "' records ", a.size(), " then ",
                                            b.size(), " kernels at two sizes"));
  }
  const double t = double(d0 - small) / double(small);  // 0 at `one`, 1 at `two`
  auto along = [t](double x, double y) { return x + t * (y - x); };
  std::vector<GpuKernel> full = a;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].op != b[i].op) {
      return absl::InternalError(absl::StrCat("case '", c.name, "' records ", a[i].op, " then ",
                                              b[i].op, " at two sizes"));
    }
    full[i].flops = along(a[i].flops, b[i].flops);
    full[i].bytes = along(a[i].bytes, b[i].bytes);
    full[i].shape.m = std::llround(along(double(a[i].shape.m), double(b[i].shape.m)));
    full[i].shape.k = std::llround(along(double(a[i].shape.k), double(b[i].shape.k)));
    full[i].shape.n = std::llround(along(double(a[i].shape.n), double(b[i].shape.n)));
  }
  return full;
}

// The CSV's header and one row a case: `seconds(case, body, kernels)`, the
// seconds a call, beside the ATen ops the call ran.
template <typename Seconds>
int WriteCsv(const std::string& source, const torch::Device& device, Seconds seconds) {
  const std::string out = absl::GetFlag(FLAGS_out);
  std::ofstream csv(out);
  if (!csv) {
    std::fprintf(stderr, "kernel_holdout: cannot write --out %s\n", out.c_str());
    return 2;
  }
  csv << "# kernel_holdout " << source << ", fp32 (TF32 off), graph replay\n"
      << "class,case,reps,measured_s,ops\n";
  torch::NoGradGuard no_grad;
  for (const HoldoutCase& c : HoldoutCases()) {
    const CaseBody body = MakeBody(c, device);
    const std::vector<GpuKernel> kernels = Record(body);
    std::vector<std::string> names;
    for (const GpuKernel& k : kernels) names.push_back(k.op);
    const std::string ops = absl::StrJoin(names, "+");
    const double s = seconds(c, body, kernels);
    csv << HoldoutClassName(c.kind) << ',' << c.name << ',' << c.reps << ','
        << absl::StrFormat("%.6e", s) << ',' << ops << '\n';
    std::printf("%-13s %-26s %10.2f us  %s\n", HoldoutClassName(c.kind), c.name.c_str(), 1e6 * s,
                ops.c_str());
    std::fflush(stdout);
  }
  std::printf("written: %s\n", out.c_str());
  return 0;
}

// A preset's name or a profile file's path as a profile.
absl::StatusOr<GpuSpec> LoadGpu(const std::string& name_or_path) {
  absl::StatusOr<std::string> value = ReferenceGpuValue(name_or_path);  // a file's text
  if (!value.ok()) return value.status();
  return GpuProfileOrPreset(*value);
}

// The model's times on a profile as the CSV (--model_csv).
int WriteModelCsv(const std::string& gpu) {
  absl::StatusOr<GpuSpec> spec = LoadGpu(gpu);
  if (!spec.ok()) {
    std::fprintf(stderr, "kernel_holdout: --model_csv %s: %s\n", gpu.c_str(),
                 std::string(spec.status().message()).c_str());
    return 2;
  }
  return WriteCsv("--model_csv=" + gpu, torch::Device(torch::kCPU),
                  [&](const HoldoutCase& c, const CaseBody&, const std::vector<GpuKernel>& k) {
                    return ModelSeconds(MeasuredAs::kGraph, *spec, k, c.reps);
                  });
}

int Measure(const std::string& device_name) {
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(device_name);
  } catch (const std::exception&) {
    std::fprintf(stderr, "kernel_holdout: --measure_on '%s' is not cuda:N\n",
                 device_name.c_str());
    return 2;
  }
  if (!device.is_cuda() || !torch::cuda::is_available()) {
    std::fprintf(stderr, "kernel_holdout: --measure_on %s: no CUDA device here (not run)\n",
                 device_name.c_str());
    return 3;
  }
  if (!device.has_index()) device = torch::Device(torch::kCUDA, 0);
  const int runs = absl::GetFlag(FLAGS_runs);
  const int rc = WriteCsv("--measure_on=" + device_name, device,
                          [&](const HoldoutCase& c, const CaseBody& body,
                              const std::vector<GpuKernel>&) {
                            return DeviceBestS(device, runs, [&] {
                                     for (int i = 0; i < c.reps; ++i) body.call();
                                   }) / c.reps;
                          });
  std::printf("graph capture failures: %d\n", CudaGraphCaptureFailures());
  return rc;
}

// Each measured case beside each profile's model; model / measured by class.
absl::StatusOr<Ratios> CaseTable(const std::vector<MeasuredCase>& measured,
                                 const std::vector<std::pair<std::string, GpuSpec>>& gpus,
                                 MeasuredAs measured_as) {
  Ratios ratios;
  std::printf("%-13s %-26s %11s", "class", "case", "measured");
  for (const auto& [name, spec] : gpus) std::printf(" %12s", name.substr(0, 12).c_str());
  std::printf("\n");
  for (const auto& [c, measured_s] : measured) {
    absl::StatusOr<std::vector<GpuKernel>> kernels = RecordAtSize(c);
    if (!kernels.ok()) return kernels.status();
    auto& row = ratios[HoldoutClassName(c.kind)];
    row.resize(gpus.size());
    std::printf("%-13s %-26s %8.2f us", HoldoutClassName(c.kind), c.name.c_str(), 1e6 * measured_s);
    for (size_t g = 0; g < gpus.size(); ++g) {
      const double model = ModelSeconds(measured_as, gpus[g].second, *kernels, c.reps);
      row[g].push_back(model / measured_s);
      std::printf(" %9.2f us", 1e6 * model);
    }
    std::printf("\n");
  }
  return ratios;
}

int Compare() {
  const absl::StatusOr<MeasuredAs> measured_as = ParseMeasuredAs(absl::GetFlag(FLAGS_measured_as));
  if (!measured_as.ok()) {
    std::fprintf(stderr, "kernel_holdout: %s\n",
                 std::string(measured_as.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<std::vector<MeasuredCase>> measured = ReadMeasured(absl::GetFlag(FLAGS_measured));
  if (!measured.ok()) {
    std::fprintf(stderr, "kernel_holdout: %s\n", std::string(measured.status().message()).c_str());
    return 2;
  }
  std::vector<std::pair<std::string, GpuSpec>> gpus;
  for (absl::string_view g : absl::StrSplit(absl::GetFlag(FLAGS_gpu), ',')) {
    absl::StatusOr<GpuSpec> spec = LoadGpu(std::string(g));
    if (!spec.ok()) {
      std::fprintf(stderr, "kernel_holdout: --gpu %s: %s\n", std::string(g).c_str(),
                   std::string(spec.status().message()).c_str());
      return 2;
    }
    gpus.emplace_back(std::string(g), *spec);
  }
  absl::StatusOr<Ratios> ratios = CaseTable(*measured, gpus, *measured_as);
  if (!ratios.ok()) {
    std::fprintf(stderr, "kernel_holdout: %s\n", std::string(ratios.status().message()).c_str());
    return 2;
  }
  std::vector<std::string> names;
  for (const auto& [name, spec] : gpus) names.push_back(name);
  const int outside = PrintClassTable(*ratios, names, absl::GetFlag(FLAGS_tolerance));
  return absl::GetFlag(FLAGS_check) && outside > 0 ? 1 : 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::ParseCommandLine(argc, argv);
  const std::string measure_on = absl::GetFlag(FLAGS_measure_on);
  if (!measure_on.empty()) return hpt::Measure(measure_on);
  if (!absl::GetFlag(FLAGS_model_csv).empty()) {
    return hpt::WriteModelCsv(absl::GetFlag(FLAGS_model_csv));
  }
  if (!absl::GetFlag(FLAGS_measured).empty()) return hpt::Compare();
  std::fprintf(stderr, "kernel_holdout: give --measure_on=cuda:N, --measured=FILE.csv or "
                       "--model_csv=GPU\n");
  return 2;
}
