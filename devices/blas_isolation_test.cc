// In a process that holds LibTorch and the device models (a GPU worker on
// CPU, the benchmarks), LibTorch's GEMMs must stay on its own BLAS: the
// device models' OpenBLAS is opened privately (devices/blas.cc), so the
// process-wide sgemm_ is LibTorch's, while hpt::Sgemm still runs OpenBLAS.
#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "devices/blas.h"
#include "gtest/gtest.h"
#include "torch/torch.h"

namespace hpt {
namespace {

std::string LibraryOf(void* symbol) {
  Dl_info info;
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

bool OpenBlasLoaded() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (std::string(info->dlpi_name).find("openblas") != std::string::npos) {
          *static_cast<bool*>(data) = true;
        }
        return 0;
      },
      &found);
  return found;
}

TEST(BlasIsolation, LibTorchKeepsItsOwnGemmAndTheDevicesUseOpenBlas) {
  // A LibTorch product, so its BLAS is in use.
  torch::Tensor a = torch::ones({8, 8}), b = torch::full({8, 8}, 2.0);
  EXPECT_FLOAT_EQ(torch::mm(a, b)[3][5].item<float>(), 16.0f);
  const std::string global = LibraryOf(dlsym(RTLD_DEFAULT, "sgemm_"));
  EXPECT_NE(global.find("libtorch_cpu"), std::string::npos) << global;

  const std::vector<float> x = {1, 2, 3, 4}, y = {5, 6, 7, 8};  // 2 x 2 each
  std::vector<float> c(4, 0);
  Sgemm(2, 2, 2, 1.0f, x.data(), 2, y.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{19, 22, 43, 50}));
  EXPECT_TRUE(OpenBlasLoaded());
  // Opened RTLD_LOCAL: loading it did not change what sgemm_ means.
  EXPECT_EQ(LibraryOf(dlsym(RTLD_DEFAULT, "sgemm_")), global);
}

}  // namespace
}  // namespace hpt
