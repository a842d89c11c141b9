// NumPy's .npy format (numpy.lib.format, version 1.0 and 2.0): the
// inputs and outputs of `hptctl predict`, so a scientist's arrays go in and
// come out with np.save / np.load.
//
//   ASSIGN_OR_RETURN(HostTensor x, ReadNpy("x.npy"));
#ifndef HPT_HPTCTL_NPY_FILE_H_
#define HPT_HPTCTL_NPY_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"

namespace hpt {

// Little-endian float32 or float64 (converted to float32), C order.
// Errors name the file and the header field at fault ('descr',
// 'fortran_order', 'shape') and never quote the file's data.
absl::StatusOr<HostTensor> ReadNpy(const std::string& path);

// float32, C order, version 1.0.
absl::Status WriteNpy(const HostTensor& tensor, const std::string& path);

// A whole file's bytes (the .npy and safetensors readers'), as
// ReadUserFile (common/user_file.h) reads them: NOT_FOUND names the file
// when it cannot be opened; what is no regular file, or is over
// kMaxArrayFileBytes, is refused without being read.
inline constexpr int64_t kMaxArrayFileBytes = int64_t{4} << 30;
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace hpt

#endif  // HPT_HPTCTL_NPY_FILE_H_
