// The request ledger (R-DIST-5, R-DIST-6): per
// planned request its state, owner worker and attempt, and the rule that
// every request ends in exactly one final record. Pure: no I/O, no clock
// (times are passed in as ns after t0). One writer (the dispatcher thread).
#ifndef SURGE_COORDINATOR_DISPATCH_REQUEST_LEDGER_H_
#define SURGE_COORDINATOR_DISPATCH_REQUEST_LEDGER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "surge/v1/record.pb.h"

namespace surge::coordinator {

class RequestLedger {
 public:
  enum class State : uint8_t { kUnassigned, kAssigned, kFinal };
  // Receives the final records the ledger itself makes, one at a time (a
  // plan of 10 M requests must not be materialised as records at once).
  using Emit = absl::FunctionRef<void(surge::v1::RequestRecord)>;

  // How TakeBack split a dead worker's requests; the three add up to what it
  // held (assigned, not final).
  struct TakeBackCounts {
    // (With sessions lost and not_sent count turns, reassigned sessions.)
    // Ended LOST "send_unknown: ..." (may have been sent).
    uint64_t lost = 0;
    // Ended NOT_SENT "not_sent: ..." (provably unsent, already due).
    uint64_t not_sent = 0;
    // Queued again with attempt + 1 (provably unsent, still ahead).
    uint64_t reassigned = 0;
  };

  // Margin beyond the lease for "provably unsent" (ε), ns.
  static constexpr int64_t kReassignMarginNs = 50 * 1000 * 1000;

  // `offset_ns`: planned offsets after t0, ns, non-decreasing (the plan).
  // `num_owners`: worker indices are 0..num_owners-1. The first
  // `num_warmups` entries are warm-ups (planned before t0, negative
  // offsets): the ledger's slots are the warm-ups 0..W-1, then the plan's
  // requests W..W+N-1. Every method takes and returns slots; records and
  // assignments carry the wire index (WireIndex): plan request i keeps
  // index i, warm-up s gets index N + s (never one of the plan's), and its
  // records are marked warmup. Without warm-ups slot = index.
  RequestLedger(std::vector<int64_t> offset_ns, int num_owners, size_t num_warmups = 0);

  // Multi-turn sessions (docs/SESSIONS.md): plan request p (slot W + p) is
  // a session of `turns[p]` >= 1 turns, and `think_ns[k]` the think time
  // before turn k of the plan's turns numbered in plan order (0 for each
  // session's turn 0). The records of session p carry the wire indices
  // FirstTurn(p) .. FirstTurn(p) + turns[p] − 1 (warm-ups come after all the
  // plan's turns); a session stays with the worker it was assigned to and
  // is final when each of its turns has its record, which come in turn
  // order. Call once, before anything is assigned; sizes must match.
  void SetSessions(std::vector<uint32_t> turns, std::vector<int64_t> think_ns);
  bool has_sessions() const { return !turn_base_.empty(); }
  // Records the run ends with: the warm-ups, then the plan's requests (with
  // sessions: their turns).
  uint64_t records_expected() const { return num_warmups_ + plan_records(); }
  uint64_t plan_records() const {
    return has_sessions() ? turn_base_.back() : offset_ns_.size() - num_warmups_;
  }

  size_t size() const { return offset_ns_.size(); }
  // Warm-ups, and the plan's own requests (size() − num_warmups()).
  size_t num_warmups() const { return num_warmups_; }
  size_t plan_size() const { return offset_ns_.size() - num_warmups_; }
  bool is_warmup(uint64_t slot) const { return slot < num_warmups_; }
  // The index a slot's assignment and record carry (with sessions: its turn
  // 0's).
  uint64_t WireIndex(uint64_t slot) const {
    if (slot < num_warmups_) return plan_records() + slot;
    return has_sessions() ? turn_base_[slot - num_warmups_] : slot - num_warmups_;
  }
  // Turns of slot i (1 without sessions, and for a warm-up) and those with a
  // final record so far.
  uint32_t TurnsOf(uint64_t i) const {
    if (!has_sessions() || is_warmup(i)) return 1;
    return static_cast<uint32_t>(turn_base_[i - num_warmups_ + 1] - turn_base_[i - num_warmups_]);
  }
  uint32_t turns_done(uint64_t i) const {
    return has_sessions() ? turns_done_[i] : (state_[i] == State::kFinal ? 1 : 0);
  }
  // The slot of a wire index; size() (no slot) when out of range.
  uint64_t SlotOf(uint64_t index) const;
  int64_t offset_ns(uint64_t i) const { return offset_ns_[i]; }
  State state(uint64_t i) const { return state_[i]; }
  // Worker holding request i (-1 when none).
  int32_t owner(uint64_t i) const { return owner_[i]; }
  uint8_t attempt(uint64_t i) const { return attempt_[i]; }
  // Requests assigned to `owner` and not final yet.
  size_t outstanding(int32_t owner) const;
  // Final records handed out so far (== records_expected() at the end of a
  // run).
  uint64_t final_count() const { return final_count_; }
  // Records refused by Accept (wrong owner, stale attempt, duplicate,
  // unknown index): dropped; 0 in a healthy run.
  uint64_t refused() const { return refused_; }
  // Requests taken back from a dead worker and queued again (attempt + 1).
  uint64_t reassigned() const { return reassigned_; }

  // The earliest unassigned request planned before `horizon_ns` (ns after
  // t0): taken-back requests and never-assigned ones in planned order, a
  // taken-back one first on a tie. nullopt when there is none.
  std::optional<uint64_t> NextDue(int64_t horizon_ns) const;
  // Assigns the request NextDue returned to `owner`. Returns its attempt.
  uint8_t Assign(uint64_t index, int32_t owner);

  // A record reported by worker `from`. Accepted (returned final, with
  // planned_ns set) only when the request is assigned to `from` with the
  // record's attempt: a record of a stale attempt or owner (a fenced worker,
  // a reassigned index) or a second record is refused and counted (fencing).
  // With sessions: only the record of the session's next turn is accepted
  // (a later turn's planned_ns is the worker's: its due time).
  std::optional<surge::v1::RequestRecord> Accept(int32_t from,
                                                 const surge::v1::RequestRecord& record);

  // Worker `owner` was declared dead. Times are ns after
  // t0 on the coordinator's clock:
  //  - `may_have_sent_until_ns`: the latest planned time the worker may still
  //    have released — its last message + lease (+ margin) for a silent
  //    worker; the moment its exit was seen (+ margin) for a process that
  //    exited. Its requests planned at or before it end LOST
  //    "send_unknown: worker k lost (why)" (at-most-once);
  //  - the others are provably unsent. Those planned after
  //    `now_ns` + kReassignMarginNs are queued again with attempt + 1 when
  //    `may_reassign` (they keep their planned time); those already due (or
  //    all of them when not `may_reassign`) end NOT_SENT
  //    "not_sent: worker k lost before this request could be sent (why)",
  //    rather than being sent late in a burst.
  // A session that has begun is never reassigned: each turn it has no
  // record of is judged by the earliest it can be due (the next turn's due
  // time the last record gave, plus the think times between): at or before
  // `may_have_sent_until_ns` it is LOST "send_unknown: ...", after it NOT_SENT
  // "not_sent: session_lost: worker k lost (why)".
  // Records are emitted in index order. Returns how many went each way.
  TakeBackCounts TakeBack(int32_t owner, int64_t may_have_sent_until_ns, int64_t now_ns,
                          bool may_reassign, absl::string_view why, Emit emit);

  // Worker `owner` is leaving on its own (a stop signal) and hands back
  // requests it never released: each `(index, attempt)` still assigned to
  // it with that attempt is provably unsent. Those planned after `now_ns` +
  // kReassignMarginNs are queued again with attempt + 1 when
  // `may_reassign`; the others end NOT_SENT "not_sent: worker k left before
  // this request could be sent (why)". Pairs it no longer owns (taken back,
  // final, a stale attempt) are skipped. Records are emitted in the order
  // given. Returns how many went each way (lost is 0).
  struct HandedBack {
    uint64_t index = 0;
    uint32_t attempt = 0;
  };
  TakeBackCounts HandBack(int32_t owner, const std::vector<HandedBack>& requests, int64_t now_ns,
                          bool may_reassign, absl::string_view why, Emit emit);

  // Worker `owner` is alive but has reported itself idle (nothing in flight
  // or queued) for the idle grace: its requests planned at or before
  // `due_before_ns` will never get a record (lost in transit). They end LOST
  // "record_lost: worker k has been idle without reporting this request".
  // Returns how many.
  uint64_t GiveUpIdle(int32_t owner, int64_t due_before_ns, Emit emit);

  // Every unassigned request (taken-back ones first, then the never-assigned
  // ones in index order) ends NOT_SENT with `reason` as its error.
  void CloseUnassigned(absl::string_view reason, Emit emit);

  // The end of the run: every request still open ends, in index order:
  // unassigned → NOT_SENT "not_sent: run_ended"; assigned → INTERRUPTED
  // "interrupted: no_record" after a stop (`stopping`), else LOST
  // "lost: no_record_before_drain_deadline".
  void CloseOpen(bool stopping, Emit emit);

 private:
  // Makes `record` the final one of slot `i` (state, wire index, warmup
  // mark, planned_ns, counts).
  surge::v1::RequestRecord Finalize(uint64_t i, surge::v1::RequestRecord record);
  // How one turn the ledger ends itself ends.
  struct Ending {
    surge::v1::RequestStatus status;
    surge::v1::FailureKind kind;
    std::string error;
  };
  // Ends every turn of slot `i` without a record, in turn order, each as
  // `how(earliest_due_ns, k)` says (k = 0 for the first of them; the
  // earliest due of a later turn adds the think time before it).
  void EndTurns(uint64_t i, int32_t worker,
                absl::FunctionRef<Ending(int64_t earliest_due_ns, uint32_t k)> how, Emit emit);
  // The earliest time slot i's next turn can be due, ns after t0.
  int64_t NextDueNs(uint64_t i) const { return has_sessions() ? next_due_ns_[i] : offset_ns_[i]; }
  // A session that has begun (a turn has its record): it stays where it is.
  bool Begun(uint64_t i) const { return has_sessions() && turns_done_[i] > 0; }
  // Takes assigned slot `i` back from its owner and queues it again with
  // attempt + 1 (call SortReassign after a batch).
  void Requeue(uint64_t i);
  // Keeps reassign_ in planned order (offset, then slot).
  void SortReassign();
  surge::v1::RequestRecord Made(uint64_t i, int32_t worker, surge::v1::RequestStatus status,
                                surge::v1::FailureKind kind, std::string error) const;

  std::vector<int64_t> offset_ns_;
  size_t num_warmups_ = 0;
  std::vector<State> state_;
  std::vector<int16_t> owner_;
  std::vector<uint8_t> attempt_;
  std::vector<size_t> outstanding_;
  // Next never-assigned index; taken-back requests wait in `reassign_`
  // (sorted by planned offset, then index) and go first.
  uint64_t cursor_ = 0;
  std::deque<uint64_t> reassign_;
  uint64_t final_count_ = 0;
  uint64_t refused_ = 0;
  uint64_t reassigned_ = 0;
  // Sessions only (empty without): turn_base_[p] = wire index of session
  // p's turn 0 (plan_size() + 1 entries, the last = all turns), the think
  // time before each turn by wire index, per slot the turns recorded and
  // the earliest due time of the next one.
  std::vector<uint64_t> turn_base_;
  std::vector<int64_t> think_ns_;
  std::vector<uint16_t> turns_done_;
  std::vector<int64_t> next_due_ns_;
};

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_REQUEST_LEDGER_H_
