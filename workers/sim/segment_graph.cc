#include "workers/sim/segment_graph.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "devices/cpu_kernels.h"

namespace hpt {
namespace {

void AddInto(FloatBuffer& acc, const FloatBuffer& v) {
  if (acc.empty()) {
    acc = v;
    return;
  }
  AddInPlace(acc.data(), v.data(), static_cast<int64_t>(v.size()));
}

}  // namespace

SegmentGraph::SegmentGraph(const DeviceNode& node, SegmentSpec spec)
    : node_(node), spec_(std::move(spec)) {}

absl::StatusOr<std::unique_ptr<SegmentGraph>> SegmentGraph::Create(
    const DeviceNode& node, const SegmentSpec& spec,
    std::map<std::string, HostTensor>& params, CostBuilder* cost) {
  if (spec.ops().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("segment '", spec.name(), "' has no ops: a ",
                                                   KindName(node.kind),
                                                   " worker runs a segment, not a whole model"));
  }
  std::unique_ptr<SegmentGraph> graph(new SegmentGraph(node, spec));
  if (absl::Status s = graph->Compile(params, cost); !s.ok()) return s;
  return graph;
}

absl::Status SegmentGraph::Compile(std::map<std::string, HostTensor>& params,
                                   CostBuilder* cost) {
  const std::string where = absl::StrCat("segment '", spec_.name(), "' op ");
  chain_ = spec_.inputs().empty();
  std::set<std::string> defined;
  if (chain_) {
    inputs_ = {"input"};
  } else {
    inputs_.assign(spec_.inputs().begin(), spec_.inputs().end());
  }
  defined.insert(inputs_.begin(), inputs_.end());
  std::string previous = inputs_.front();
  for (int i = 0; i < spec_.ops_size(); ++i) {
    SegmentOp& op = *spec_.mutable_ops(i);
    if (chain_) {
      if (op.inputs().empty()) op.add_inputs(previous);
      if (op.output().empty()) op.set_output(absl::StrCat("op", i));
    }
    if (op.inputs().empty() || op.output().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, i, " needs named inputs and an output in a graph segment"));
    }
    for (const std::string& in : op.inputs()) {
      if (!defined.count(in)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, i, " reads '", in, "', which is neither a segment input nor "
            "the output of an earlier op"));
      }
    }
    const SegmentOpKernel* kernel = FindSegmentOp(op.type());
    if (kernel == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where, i, " has an unknown type"));
    }
    const std::string op_where = absl::StrCat(where, i);
    OpLoad load{node_, op, op_where,
                [&](const std::string& name, bool trainable,
                    size_t rank) -> absl::StatusOr<SegmentParam*> {
                  auto it = params.find(name);
                  if (name.empty() || it == params.end() || it->second.shape.size() != rank) {
                    return absl::InvalidArgumentError(absl::StrCat(
                        op_where, ": parameter '", name, "' must be sent as a ", rank,
                        "-D tensor"));
                  }
                  SegmentParam& p = params_[name];
                  p.shape = it->second.shape;
                  p.value = it->second.data.ToVector();
                  p.trainable = trainable;
                  params.erase(it);
                  return &p;
                },
                params, cost};
    if (absl::Status s = kernel->load(load); !s.ok()) return s;
    defined.insert(op.output());
    previous = op.output();
  }
  if (chain_) {
    outputs_ = {previous};
  } else {
    outputs_.assign(spec_.outputs().begin(), spec_.outputs().end());
    for (const std::string& out : outputs_) {
      if (!defined.count(out)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "segment '", spec_.name(), "' output '", out, "' is never computed"));
      }
    }
  }
  last_reader_.assign(spec_.ops_size(), false);
  std::set<std::string> read_later(outputs_.begin(), outputs_.end());
  for (int i = spec_.ops_size() - 1; i >= 0; --i) {
    const SegmentOp& op = spec_.ops(i);
    const std::string& first = op.inputs(0);
    last_reader_[i] = !read_later.count(first) &&
                      std::count(op.inputs().begin(), op.inputs().end(), first) == 1;
    read_later.insert(op.inputs().begin(), op.inputs().end());
  }
  return absl::OkStatus();
}

int64_t SegmentGraph::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, p] : params_) n += int64_t(p.value.size());
  return n;
}

absl::StatusOr<std::map<std::string, HostTensor>> SegmentGraph::Forward(
    std::map<std::string, HostTensor> inputs, uint64_t mask_seed,
    CostBuilder* cost, Saved* saved) {
  const bool train = saved != nullptr;
  if (train) saved->mask_seed = mask_seed;
  std::map<std::string, HostTensor> values;
  for (const std::string& name : inputs_) {
    auto it = inputs.find(name);
    if (it == inputs.end() || it->second.num_elements() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment '", spec_.name(), "' input '", name, "' was not sent"));
    }
    values[name] = std::move(it->second);
  }
  for (int i = 0; i < spec_.ops_size(); ++i) {
    const SegmentOp& op = spec_.ops(i);
    const std::string where = absl::StrCat("segment '", spec_.name(), "' op ", i, ": ");
    std::vector<float> aux;
    // An element-wise op's result starts as its first input: the input's
    // own buffer when nothing reads it afterwards in an inference forward
    // (training keeps every value for the backward), else a copy.
    OpForward forward{node_,     op,        i,         where,
                      params_,   values,    values.at(op.inputs(0)),
                      !train && last_reader_[i],
                      mask_seed, train ? &aux : nullptr, cost};
    absl::StatusOr<HostTensor> y = FindSegmentOp(op.type())->forward(forward);
    if (!y.ok()) return y.status();
    if (train) saved->aux[i] = std::move(aux);
    values[op.output()] = std::move(*y);
  }
  std::map<std::string, HostTensor> outputs;
  for (const std::string& name : outputs_) {
    outputs[name] = train ? values.at(name) : std::move(values.at(name));
  }
  if (train) saved->values = std::move(values);
  return outputs;
}

absl::StatusOr<std::map<std::string, HostTensor>> SegmentGraph::Backward(
    const Saved& saved, std::map<std::string, HostTensor> grad_outputs,
    CostBuilder* cost) {
  std::map<std::string, HostTensor> grads;
  for (auto& [name, g] : grad_outputs) {
    if (std::find(outputs_.begin(), outputs_.end(), name) == outputs_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment '", spec_.name(), "' has no output '", name, "'"));
    }
    const HostTensor& value = saved.values.at(name);
    if (g.num_elements() != value.num_elements()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient of '", name, "' has shape ", g.ShapeString(), "; the forward made ",
          value.ShapeString()));
    }
    g.shape = value.shape;
    grads[name] = std::move(g);
  }
  auto accumulate = [&](const std::string& name, HostTensor g) {
    auto [it, inserted] = grads.try_emplace(name, std::move(g));
    if (!inserted) {
      AddInto(it->second.data, g.data);
      cost->Elementwise(double(g.data.size()));
    }
  };
  for (int i = spec_.ops_size() - 1; i >= 0; --i) {
    const SegmentOp& op = spec_.ops(i);
    auto found = grads.find(op.output());
    if (found == grads.end()) continue;  // nothing downstream depends on it
    HostTensor g = std::move(found->second);
    grads.erase(found);
    auto aux = saved.aux.find(i);
    OpBackward backward{node_,
                        op,
                        i,
                        params_,
                        saved.values,
                        aux == saved.aux.end() ? nullptr : &aux->second,
                        saved.mask_seed,
                        std::move(g),
                        saved.values.at(op.inputs(0)),
                        accumulate,
                        cost};
    if (absl::Status s = FindSegmentOp(op.type())->backward(backward); !s.ok()) return s;
  }
  std::map<std::string, HostTensor> result;
  for (const std::string& name : inputs_) {
    auto it = grads.find(name);
    result[name] = it != grads.end() ? std::move(it->second)
                                     : HostTensor(saved.values.at(name).shape);
  }
  return result;
}

absl::Status SegmentGraph::Reprogram(CostBuilder* cost) {
  for (auto& [name, p] : params_) {
    if (!p.trainable || !p.crossbars) continue;
    const std::vector<float> wt = Transpose(p.value.data(), p.shape[0], p.shape[1]);
    absl::StatusOr<ReramReport> programmed = p.crossbars->Program(wt.data());
    if (!programmed.ok()) return programmed.status();
    cost->ReramProgram(name, *p.crossbars, *programmed);
  }
  return absl::OkStatus();
}

}  // namespace hpt
