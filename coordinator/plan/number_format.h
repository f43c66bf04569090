// Numbers as the pages and the log print them. Pure.
#ifndef SURGE_COORDINATOR_PLAN_NUMBER_FORMAT_H_
#define SURGE_COORDINATOR_PLAN_NUMBER_FORMAT_H_

#include <cstdint>
#include <string>

namespace surge::coordinator {

// Shortest text that reads back as `v`, in fixed notation for magnitudes in
// [1e-4, 1e15) and for 0 ("100", "0.5"), else in general notation.
std::string FormatShort(double v);

// 10000000 → "10,000,000".
std::string FormatCount(uint64_t n);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_NUMBER_FORMAT_H_
