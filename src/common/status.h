// Status and Result<T>: how every layer reports expected failures. The types
// are libtenure's public ones (tenure/status.h, standard C++ only), so the
// SDK hands its users the Statuses its internals produce; this header adds
// the macros the layers use. Broken invariants are not Statuses: they are
// TENURE_ASSERTs (common/assert.h).
#pragma once

#include <utility>

#include "common/assert.h"
#include "tenure/status.h"

#define TENURE_CONCAT_INNER(a, b) a##b
#define TENURE_CONCAT(a, b) TENURE_CONCAT_INNER(a, b)

#define TENURE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::tenure::Status tenure_status_ = (expr);        \
    if (!tenure_status_.ok()) return tenure_status_; \
  } while (0)

#define TENURE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define TENURE_ASSIGN_OR_RETURN(lhs, expr) \
  TENURE_ASSIGN_OR_RETURN_IMPL(TENURE_CONCAT(tenure_result_, __LINE__), lhs, expr)
