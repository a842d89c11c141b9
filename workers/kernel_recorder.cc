#include "workers/kernel_recorder.h"

#include <ATen/record_function.h>
#include <ATen/core/ivalue.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace hpt {
namespace {

struct Frame {
  std::string op;
  double flops = 0;        // a product's
  GemmShape shape;         // a product's, where its operands say it
  double in_elements = 0;  // another op's inputs (its FLOPs are finished at the end)
  double in_bytes = 0;
  bool product = false;
  bool inside_product = false;  // called by a product: part of its GEMM
  bool backward_node = false;   // an autograd node, not an op
  int kernels_below = 0;        // kernels launched by ops it called
};

// The finished kernels of a recording. Each recorder records its own
// thread; the callback is registered thread-locally and autograd's threads
// inherit it (CUDA backward runs there), so ops on a thread with no
// recorder of its own go to the recording that started last. Every thread
// keeps its own stack of open ops.
struct Recording {
  std::mutex mu;
  std::vector<GpuKernel> kernels;
};
thread_local Recording* thread_recording = nullptr;
std::atomic<Recording*> latest_recording{nullptr};
thread_local std::vector<Frame> open_ops;

Recording* Current() {
  return thread_recording != nullptr ? thread_recording : latest_recording.load();
}

double Bytes(const at::Tensor& t) {
  return t.defined() ? double(t.numel()) * double(t.element_size()) : 0.0;
}
double Numel(const at::Tensor& t) { return t.defined() ? double(t.numel()) : 0.0; }

// Sums over the tensors of an argument list (lists of tensors included).
template <typename F>
double SumTensors(c10::ArrayRef<const c10::IValue> values, F f) {
  double total = 0;
  for (const c10::IValue& v : values) {
    if (v.isTensor()) {
      total += f(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) total += f(t);
    }
  }
  return total;
}

const at::Tensor* TensorAt(c10::ArrayRef<const c10::IValue> in, size_t i) {
  return i < in.size() && in[i].isTensor() ? &in[i].toTensor() : nullptr;
}

struct Product {
  double flops = 0;
  GemmShape shape;  // attention: query length, key length, head dimension
};

// FLOPs (and, for a GEMM, the shape) of a matrix product; none for other
// ops (element-wise work: one op per element of the larger of inputs and
// outputs, counted at the end).
std::optional<Product> ProductOf(const std::string& op, c10::ArrayRef<const c10::IValue> in) {
  auto dims = [](const at::Tensor* t) { return t ? t->sizes().vec() : std::vector<int64_t>{}; };
  if (op == "aten::mm" || op == "aten::addmm") {
    const size_t a = op == "aten::mm" ? 0 : 1;
    const auto x = dims(TensorAt(in, a)), y = dims(TensorAt(in, a + 1));
    if (x.size() != 2 || y.size() != 2) return Product{};
    return Product{2.0 * double(x[0]) * double(x[1]) * double(y[1]) +
                       (op == "aten::addmm" ? double(x[0]) * double(y[1]) : 0.0),
                   GemmShape{x[0], y[1], x[1]}};  // m, n, k
  }
  if (op == "aten::bmm" || op == "aten::baddbmm") {
    const size_t a = op == "aten::bmm" ? 0 : 1;
    const auto x = dims(TensorAt(in, a)), y = dims(TensorAt(in, a + 1));
    if (x.size() != 3 || y.size() != 3) return Product{};
    return Product{2.0 * double(x[0]) * double(x[1]) * double(x[2]) * double(y[2]) +
                       (op == "aten::baddbmm" ? double(x[0]) * double(x[1]) * double(y[2]) : 0.0),
                   GemmShape{x[1], y[2], x[2]}};
  }
  // Fused attention (the CPU flash kernel, CUDA's flash, memory-efficient
  // and cuDNN kernels): one kernel. Forward: q k^T and p v, 4 B H Lq Lk D;
  // backward (flash recomputes the scores): q k^T again, dV, dP, dQ, dK,
  // 10 B H Lq Lk D. q, k are [B, H, L, D]; a backward's come after its
  // output gradient. The composite aten::scaled_dot_product_attention is
  // not itself a kernel: what it calls is.
  if (op.rfind("aten::_scaled_dot_product_", 0) == 0) {
    const bool backward = op.find("_backward") != std::string::npos;
    const auto q = dims(TensorAt(in, backward ? 1 : 0)), k = dims(TensorAt(in, backward ? 2 : 1));
    if (q.size() != 4 || k.size() != 4) return Product{};
    const double pairs = double(q[0]) * double(q[1]) * double(q[2]) * double(k[2]) * double(q[3]);
    // Shape: query length, key length, head dimension (as m, n, k).
    return Product{(backward ? 10.0 : 4.0) * pairs, GemmShape{q[2], k[2], q[3]}};
  }
  if (op == "aten::mv" || op == "aten::addmv") {
    const auto x = dims(TensorAt(in, op == "aten::mv" ? 0 : 1));
    if (x.size() != 2) return Product{};
    return Product{2.0 * double(x[0]) * double(x[1]), GemmShape{x[0], 1, x[1]}};
  }
  return std::nullopt;
}

bool IsCollective(const std::string& op) {
  return op.rfind("gloo:", 0) == 0 || op.rfind("nccl:", 0) == 0 ||
         op.rfind("c10d", 0) == 0;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (Current() == nullptr) return nullptr;
  Frame f;
  f.op = fn.name();
  f.backward_node = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
  // CPU LibTorch may run a product as several calls (a bmm as a loop of
  // small products); on a GPU it is one cuBLAS call, so what it calls is
  // never a kernel and needs no sizes.
  f.inside_product =
      !open_ops.empty() && (open_ops.back().product || open_ops.back().inside_product);
  if (!f.inside_product) {
    const c10::ArrayRef<const c10::IValue> in = fn.inputs();
    const std::optional<Product> product = ProductOf(f.op, in);
    f.product = product.has_value();
    if (product) {
      f.flops = product->flops;
      f.shape = product->shape;
    }
    if (!f.product) f.in_elements = SumTensors(in, Numel);
    f.in_bytes = SumTensors(in, Bytes);
  }
  open_ops.push_back(std::move(f));
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  Recording* r = Current();
  if (r == nullptr || open_ops.empty()) return;
  Frame f = std::move(open_ops.back());
  open_ops.pop_back();
  // A product launches its GEMM whatever it calls (a bias copy, a resize);
  // any other op launches a kernel only if nothing it called did.
  const bool launches =
      !f.inside_product && !IsCollective(f.op) &&
      (f.product || (f.kernels_below == 0 && !LaunchesNoKernel(f.op)));
  if (!open_ops.empty() && (launches || f.kernels_below > 0)) {
    ++open_ops.back().kernels_below;
  }
  // An op the program itself called (not one inside another op) that
  // launches nothing still costs its dispatch on the host: kept as a
  // kernel-less entry (AddKernels counts it as a host op).
  const bool called_by_program =
      open_ops.empty() || open_ops.back().backward_node;
  if (!launches && !f.backward_node && !f.inside_product && f.kernels_below == 0 &&
      LaunchesNoKernel(f.op) && called_by_program) {
    std::lock_guard<std::mutex> lock(r->mu);
    r->kernels.push_back(GpuKernel{std::move(f.op), 0, 0});
    return;
  }
  if (!launches) return;
  const std::vector<c10::IValue>& outputs = fn.outputs();
  const c10::ArrayRef<const c10::IValue> out(outputs.data(), outputs.size());
  GpuKernel k;
  k.op = std::move(f.op);
  k.bytes = f.in_bytes + SumTensors(out, Bytes);
  k.flops = f.product ? f.flops : std::max(f.in_elements, SumTensors(out, Numel));
  k.shape = f.shape;
  std::lock_guard<std::mutex> lock(r->mu);
  r->kernels.push_back(std::move(k));
}

}  // namespace

KernelRecorder::KernelRecorder() {
  if (thread_recording != nullptr) return;  // an outer recorder records
  open_ops.clear();
  thread_recording = new Recording();
  latest_recording.store(thread_recording);
  at::RecordFunctionCallback callback(&OnStart, &OnEnd);
  callback.needsInputs(true).needsOutputs(true);
  callback.scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  handle_ = at::addThreadLocalCallback(callback);
  active_ = true;
}

KernelRecorder::~KernelRecorder() { Finish(); }

std::vector<GpuKernel> KernelRecorder::Finish() {
  if (!active_) return {};
  active_ = false;
  at::removeCallback(handle_);
  Recording* r = thread_recording;
  thread_recording = nullptr;
  Recording* expected = r;
  latest_recording.compare_exchange_strong(expected, nullptr);
  std::vector<GpuKernel> kernels;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    kernels = std::move(r->kernels);
  }
  delete r;
  return kernels;
}

std::unique_ptr<KernelRecorder> KernelMemo::Begin(const std::string& key) const {
  return recorded(key) < 2 ? std::make_unique<KernelRecorder>() : nullptr;
}

const std::vector<GpuKernel>& KernelMemo::End(const std::string& key,
                                              std::unique_ptr<KernelRecorder> recorder) {
  Shape& shape = shapes_[key];
  if (recorder == nullptr) return shape.kernels;
  shape.kernels = recorder->Finish();
  ++shape.recorded;
  return shape.kernels;
}

int KernelMemo::recorded(const std::string& key) const {
  auto it = shapes_.find(key);
  return it == shapes_.end() ? 0 : it->second.recorded;
}

}  // namespace hpt
