// What //third_party:torch_pch precompiles: LibTorch's whole C++ API, the
// header most of the LibTorch units include (third_party/torch/pch.bzl).
#include <torch/torch.h>
