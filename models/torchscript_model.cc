#include "models/torchscript_model.h"

#include <torch/script.h>

#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace hpt {
namespace {

// The first non-empty line of a library's message (LibTorch's carry a
// stack trace, TorchScript's start with a newline).
std::string FirstLine(const std::string& text) {
  const size_t begin = text.find_first_not_of("\n ");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find('\n', begin) - begin);
}

constexpr char kLinear[] = R"(def forward(self, x: Tensor) -> Tensor:
    return torch.linear(x, self.weight, self.bias)
)";

constexpr char kRelu[] = R"(def forward(self, x: Tensor) -> Tensor:
    return torch.relu(x)
)";

std::string LayerNormSource(int64_t d_model) {
  // torch::nn::LayerNorm's default eps.
  return absl::StrCat("def forward(self, x: Tensor) -> Tensor:\n",
                      "    return torch.layer_norm(x, [", d_model,
                      "], self.weight, self.bias, 1.0000000000000001e-05)\n");
}

// Sequential-like: children "0", "1", ... applied in order.
std::string SequentialSource(int children) {
  std::string body = "def forward(self, x: Tensor) -> Tensor:\n";
  for (int i = 0; i < children; ++i)
    absl::StrAppend(&body, "    x = getattr(self, \"", i, "\").forward(x)\n");
  return body + "    return x\n";
}

// MultiHeadSelfAttentionImpl::forward in eval mode (fused attention).
std::string AttentionSource(const ModelConfig& c) {
  const int64_t heads = c.num_heads(), head_dim = c.d_model() / c.num_heads();
  return absl::StrFormat(R"(def forward(self, x: Tensor) -> Tensor:
    b = x.size(0)
    t = x.size(1)
    q = self.q_proj.forward(x).view([b, t, %1$d, %2$d]).transpose(1, 2)
    k = self.k_proj.forward(x).view([b, t, %1$d, %2$d]).transpose(1, 2)
    v = self.v_proj.forward(x).view([b, t, %1$d, %2$d]).transpose(1, 2)
    heads = torch.scaled_dot_product_attention(q, k, v)
    context = heads.transpose(1, 2).reshape([b, t, %3$d])
    return self.o_proj.forward(context)
)",
                         heads, head_dim, heads * head_dim);
}

// EncoderLayerImpl::forward in eval mode (post-norm).
constexpr char kEncoderLayer[] = R"(def forward(self, x: Tensor) -> Tensor:
    h = self.norm1.forward(x + self.self_attn.forward(x))
    ff = self.ff2.forward(torch.relu(self.ff1.forward(h)))
    return self.norm2.forward(h + ff)
)";

// SpatioTemporalTransformerImpl::forward, with TokenEncoding written out
// with the same operations (dtype 6 is float32).
std::string TopSource(const ModelConfig& c, bool data_units) {
  const int64_t d = c.d_model();
  // With the data's units: forward takes and gives them (the buffers
  // data_mean and data_sd hold each station's training statistics).
  const std::string forward = data_units ? R"(
def forward(self, x: Tensor) -> Tensor:
    mean = self.data_mean.view([-1, 1])
    sd = self.data_sd.view([-1, 1])
    return self.forward_normalised((x - mean) / sd) * sd + mean
)"
                                         : R"(
def forward(self, x: Tensor) -> Tensor:
    return self.forward_normalised(x)
)";
  return absl::StrFormat(R"(def token_encoding(self, tokens: int) -> Tensor:
    position = torch.arange(tokens, dtype=6).unsqueeze(1)
    div = torch.exp(torch.arange(0, %1$d, 2, dtype=6) * %2$.17g)
    enc = torch.zeros([tokens, %1$d])
    enc[:, 0::2] = torch.sin(position * div)
    enc[:, 1::2] = torch.cos(position * div).narrow(1, 0, %3$d)
    return enc

def forward_normalised(self, x: Tensor) -> Tensor:
    e = self.embedding.forward(x)
    h = self.layers.forward(e + self.token_encoding(x.size(1)).to(e.device))
%4$s    return self.head.forward(self.reduction.forward(h))
)",
                         d, -std::log(10000.0) / double(d), d / 2,
                         c.embedding_skip() ? "    h = torch.cat([h, e], -1)\n" : "") +
         forward;
}

using torch::jit::Module;

class ScriptBuilder {
 public:
  explicit ScriptBuilder(const SpatioTemporalTransformerImpl& model)
      : unit_(std::make_shared<torch::jit::CompilationUnit>()) {
    for (const auto& item : model.named_parameters()) params_[item.key()] = item.value().detach();
  }

  // A module of its own class; `prefix` names its parameters in the model.
  Module New(const std::string& kind, const std::string& prefix,
             std::initializer_list<const char*> params, const std::string& source) {
    Module m(c10::QualifiedName(absl::StrCat("__torch__.hpt.", kind)), unit_,
             /*shouldMangle=*/true);
    for (const char* name : params) {
      m.register_parameter(name, params_.at(absl::StrCat(prefix, ".", name)).clone(), false);
    }
    if (!source.empty()) m.define(source);
    return m;
  }
  Module Linear(const std::string& prefix) {
    return New("Linear", prefix, {"weight", "bias"}, kLinear);
  }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
  std::map<std::string, torch::Tensor> params_;
};

Module BuildScript(const SpatioTemporalTransformerImpl& model, const DataUnits& units) {
  const ModelConfig& c = model.config();
  const bool raw = UsesDataUnits(units);
  const std::map<std::string, std::string> source = TorchScriptSource(c, raw);
  ScriptBuilder b(model);
  Module embedding = b.New("Sequential", "", {}, "");
  embedding.register_module("0", b.Linear("embedding.0"));
  embedding.register_module("1", b.New("ReLU", "", {}, kRelu));
  embedding.register_module("2", b.Linear("embedding.2"));
  embedding.define(source.at("embedding"));
  Module layers = b.New("ModuleList", "", {}, "");
  for (int i = 0; i < c.num_layers(); ++i) {
    const std::string p = absl::StrCat("layers.", i);
    Module attention = b.New("MultiHeadSelfAttention", "", {}, "");
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
      attention.register_module(proj, b.Linear(absl::StrCat(p, ".self_attn.", proj)));
    }
    attention.define(source.at(p + ".self_attn"));
    Module layer = b.New("EncoderLayer", "", {}, "");
    layer.register_module("self_attn", attention);
    layer.register_module("ff1", b.Linear(p + ".ff1"));
    layer.register_module("ff2", b.Linear(p + ".ff2"));
    for (const char* norm : {"norm1", "norm2"}) {
      layer.register_module(norm, b.New("LayerNorm", absl::StrCat(p, ".", norm), {"weight", "bias"},
                                        LayerNormSource(c.d_model())));
    }
    layer.define(source.at(p));
    layers.register_module(std::to_string(i), layer);
  }
  layers.define(source.at("layers"));
  Module reduction = b.New("Sequential", "", {}, "");
  reduction.register_module("0", b.Linear("reduction.0"));
  reduction.register_module("1", b.New("ReLU", "", {}, kRelu));
  reduction.define(source.at("reduction"));
  Module top = b.New("SpatioTemporalTransformer", "", {}, "");
  top.register_module("embedding", embedding);
  top.register_module("layers", layers);
  top.register_module("reduction", reduction);
  top.register_module("head", b.Linear("head"));
  if (raw) {
    const auto vector = [](const auto& values) {
      return torch::tensor(std::vector<float>(values.begin(), values.end()), torch::kFloat32);
    };
    top.register_buffer("data_mean", vector(units.mean()));
    top.register_buffer("data_sd", vector(units.sd()));
  }
  top.define(source.at(""));
  top.eval();
  return top;
}

}  // namespace

std::map<std::string, std::string> TorchScriptSource(const ModelConfig& config, bool data_units) {
  std::map<std::string, std::string> source;
  source[""] = TopSource(config, data_units);
  source["embedding"] = SequentialSource(3);
  source["layers"] = SequentialSource(config.num_layers());
  source["reduction"] = SequentialSource(2);
  for (int i = 0; i < config.num_layers(); ++i) {
    source[absl::StrCat("layers.", i)] = kEncoderLayer;
    source[absl::StrCat("layers.", i, ".self_attn")] = AttentionSource(config);
  }
  return source;
}

absl::StatusOr<std::string> TorchModelBytes(const ModelConfig& config,
                                            const std::map<std::string, HostTensor>& parameters,
                                            const DataUnits& units) {
  // Saved to memory: LibTorch's file writer ends a failed write (a full
  // disk) by throwing from a destructor, which no catch stops.
  std::ostringstream bytes;
  try {
    SpatioTemporalTransformer model(config);
    if (absl::Status s = LoadWeights(parameters, *model); !s.ok()) return s;
    BuildScript(*model, units).save(bytes);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("the TorchScript model: ", FirstLine(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("the TorchScript model: ", FirstLine(e.what())));
  }
  return bytes.str();
}

}  // namespace hpt
