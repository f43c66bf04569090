// Which worker gets the next request (R-DIST-3). The
// dispatcher asks a policy once per assigned request, over the joined
// workers in index order with their current load. Pure: no I/O, no clock.
#ifndef SURGE_COORDINATOR_DISPATCH_ASSIGNMENT_POLICY_H_
#define SURGE_COORDINATOR_DISPATCH_ASSIGNMENT_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "absl/strings/string_view.h"

namespace surge::coordinator {

// One worker as a policy sees it.
struct WorkerLoad {
  bool alive = true;
  // Assigned and not final yet (the ledger's count).
  size_t outstanding = 0;
  // Cap on `outstanding` (16,384 by default).
  size_t max_outstanding = 0;
  // In flight, from the worker's last heartbeat.
  uint32_t inflight = 0;
  bool HasRoom() const { return alive && outstanding < max_outstanding; }
};

class AssignmentPolicy {
 public:
  virtual ~AssignmentPolicy() = default;
  // The position in `workers` of the worker to take the next request, or
  // nullopt when no worker has room (alive and under its cap). The caller
  // updates `outstanding` after each pick.
  virtual std::optional<size_t> Pick(std::span<const WorkerLoad> workers) = 0;
  virtual absl::string_view name() const = 0;
};

// k6-style striping (the default): the next worker with room after the last
// one picked. With all workers alive and under their caps, request i goes to
// worker i mod W.
class RoundRobinPolicy final : public AssignmentPolicy {
 public:
  std::optional<size_t> Pick(std::span<const WorkerLoad> workers) override;
  absl::string_view name() const override { return "round-robin"; }

 private:
  size_t next_ = 0;
};

// The worker with room holding the fewest outstanding requests; on a tie
// the first such worker at or after the one following the last pick (so
// equal loads still stripe). For uneven workers (a concurrency cap, long
// streams); `--assign least-loaded`.
class LeastLoadedPolicy final : public AssignmentPolicy {
 public:
  std::optional<size_t> Pick(std::span<const WorkerLoad> workers) override;
  absl::string_view name() const override { return "least-loaded"; }

 private:
  size_t next_ = 0;
};

enum class AssignPolicyKind { kRoundRobin, kLeastLoaded };
std::unique_ptr<AssignmentPolicy> MakeAssignmentPolicy(AssignPolicyKind kind);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_ASSIGNMENT_POLICY_H_
