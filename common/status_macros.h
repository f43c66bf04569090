// SURGE_RETURN_IF_ERROR / SURGE_ASSIGN_OR_RETURN: absent from abseil 20220623.
#ifndef SURGE_COMMON_STATUS_MACROS_H_
#define SURGE_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SURGE_RETURN_IF_ERROR(expr)              \
  do {                                           \
    const ::absl::Status surge_status_ = (expr); \
    if (!surge_status_.ok()) return surge_status_; \
  } while (0)

#define SURGE_STATUS_CONCAT_INNER_(a, b) a##b
#define SURGE_STATUS_CONCAT_(a, b) SURGE_STATUS_CONCAT_INNER_(a, b)

// SURGE_ASSIGN_OR_RETURN(auto x, MakeX()); returns the error status of MakeX().
#define SURGE_ASSIGN_OR_RETURN(lhs, rexpr) \
  SURGE_ASSIGN_OR_RETURN_IMPL_(SURGE_STATUS_CONCAT_(surge_statusor_, __LINE__), lhs, rexpr)
#define SURGE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)

#endif  // SURGE_COMMON_STATUS_MACROS_H_
