// The steady-state window (RunConfig.steady_state_s; docs/DATASETS.md
// "Warm-up and steady state"): which planned requests the summary's
// latency and throughput metrics count. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_PLAN_STEADY_STATE_H_
#define SURGE_COORDINATOR_PLAN_STEADY_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace surge::coordinator {

// "A:B" as written: two finite numbers >= 0 with A < B. `fractions` when
// both are <= 1 and both are written with a decimal point ("0.1:0.9",
// "0.0:1.0"): then they are fractions of the plan's span; otherwise seconds
// of the plan ("10:50", "0:1", "0.5:2").
struct SteadyStateSpec {
  double a = 0;
  double b = 0;
  bool fractions = false;
};

// Parses `text`; nullopt for "" (no window: the whole run). Errors:
// INVALID_ARGUMENT with what is wrong in words (no field name: the caller
// adds it): not two numbers around one ':', a negative or non-finite
// number, A >= B.
absl::StatusOr<std::optional<SteadyStateSpec>> ParseSteadyState(absl::string_view text);

// The window in seconds after t0, [start_s, end_s), and the planned
// requests inside it.
struct SteadyStateWindow {
  std::string spec;  // as written, e.g. "0.2:0.8"
  double start_s = 0;
  double end_s = 0;
  // True when end_s is the plan's end and includes its last request (a
  // fraction B of 1.0): the window is then [start_s, end_s].
  bool includes_end = false;
  // Planned requests inside the window.
  uint64_t requests = 0;

  // Whether a request planned at `offset_s` is inside the window.
  bool Contains(double offset_s) const {
    return offset_s >= start_s && (offset_s < end_s || (includes_end && offset_s <= end_s));
  }
  // The window's length, seconds.
  double length_s() const { return end_s - start_s; }
};

// Resolves `spec` (written as `text`) against the plan's planned offsets
// (seconds after t0, non-decreasing): fractions are of the span, the last
// planned offset (f · t_{N−1}); a fraction B of 1.0 includes the last
// request. Errors: INVALID_ARGUMENT when no planned request falls inside
// the window (a window outside the plan, or an empty plan), naming the
// plan's span.
absl::StatusOr<SteadyStateWindow> ResolveSteadyState(const SteadyStateSpec& spec,
                                                     absl::string_view text,
                                                     const std::vector<double>& offsets_s);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_PLAN_STEADY_STATE_H_
