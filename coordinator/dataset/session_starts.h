// What the rest of a run sees of multi-turn sessions (docs/SESSIONS.md):
// the plan's requests are the sessions' starts, so the payload of plan
// request p is session p's turn 0; and the per-session facts the dispatcher
// and its ledger need (turns, think times, the later turns of an
// assignment).
#ifndef SURGE_COORDINATOR_DATASET_SESSION_STARTS_H_
#define SURGE_COORDINATOR_DATASET_SESSION_STARTS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "coordinator/dataset/payload_source.h"
#include "coordinator/dataset/session_source.h"
#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

// Plan request p's payload = session p's turn 0. `sessions` must outlive it.
std::unique_ptr<PayloadSource> MakeSessionStartPayloads(const SessionSource& sessions);

// Each session's turns, and the think time before each turn of all the
// sessions in order (0 for every turn 0): RequestLedger::SetSessions.
struct SessionShape {
  std::vector<uint32_t> turns;
  std::vector<int64_t> think_ns;
};
SessionShape ShapeOf(const SessionSource& sessions);

// Puts session p's turns 1.. (payload and think time) into `start`'s
// next_turns.
void AddLaterTurns(const SessionSource& sessions, uint64_t p, surge::v1::Assignment& start);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DATASET_SESSION_STARTS_H_
