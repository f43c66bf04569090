#include "coordinator/dispatch/assignment_policy.h"

namespace surge::coordinator {

std::optional<size_t> RoundRobinPolicy::Pick(std::span<const WorkerLoad> workers) {
  const size_t n = workers.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t pos = (next_ + k) % n;
    if (workers[pos].HasRoom()) {
      next_ = (pos + 1) % n;
      return pos;
    }
  }
  return std::nullopt;
}

std::optional<size_t> LeastLoadedPolicy::Pick(std::span<const WorkerLoad> workers) {
  const size_t n = workers.size();
  std::optional<size_t> best;
  for (size_t k = 0; k < n; ++k) {
    const size_t pos = (next_ + k) % n;
    if (!workers[pos].HasRoom()) continue;
    if (!best || workers[pos].outstanding < workers[*best].outstanding) best = pos;
  }
  if (best) next_ = (*best + 1) % n;
  return best;
}

std::unique_ptr<AssignmentPolicy> MakeAssignmentPolicy(AssignPolicyKind kind) {
  switch (kind) {
    case AssignPolicyKind::kLeastLoaded:
      return std::make_unique<LeastLoadedPolicy>();
    case AssignPolicyKind::kRoundRobin:
      break;
  }
  return std::make_unique<RoundRobinPolicy>();
}

}  // namespace surge::coordinator
