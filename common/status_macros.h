// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr.
//
//   ASSIGN_OR_RETURN(Dataset data, LoadCsv(path));
//   RETURN_IF_ERROR(data.Validate());
#ifndef HPT_COMMON_STATUS_MACROS_H_
#define HPT_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HPT_STATUS_CONCAT_INNER_(a, b) a##b
#define HPT_STATUS_CONCAT_(a, b) HPT_STATUS_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    const ::absl::Status hpt_status_ = (expr); \
    if (!hpt_status_.ok()) return hpt_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  HPT_ASSIGN_OR_RETURN_IMPL_(HPT_STATUS_CONCAT_(hpt_statusor_, __LINE__), lhs, expr)

#define HPT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

#endif  // HPT_COMMON_STATUS_MACROS_H_
