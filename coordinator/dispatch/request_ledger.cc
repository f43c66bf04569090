#include "coordinator/dispatch/request_ledger.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"

namespace surge::coordinator {

RequestLedger::RequestLedger(std::vector<int64_t> offset_ns, int num_owners, size_t num_warmups)
    : offset_ns_(std::move(offset_ns)),
      num_warmups_(std::min(num_warmups, offset_ns_.size())),
      state_(offset_ns_.size(), State::kUnassigned),
      owner_(offset_ns_.size(), -1),
      attempt_(offset_ns_.size(), 0),
      outstanding_(static_cast<size_t>(std::max(num_owners, 0)), 0) {}

void RequestLedger::SetSessions(std::vector<uint32_t> turns, std::vector<int64_t> think_ns) {
  turn_base_.assign(turns.size() + 1, 0);
  for (size_t p = 0; p < turns.size(); ++p) turn_base_[p + 1] = turn_base_[p] + turns[p];
  think_ns_ = std::move(think_ns);
  think_ns_.resize(turn_base_.back(), 0);
  turns_done_.assign(size(), 0);
  next_due_ns_ = offset_ns_;
}

uint64_t RequestLedger::SlotOf(uint64_t index) const {
  const uint64_t n = plan_records();
  if (index < n) {
    if (!has_sessions()) return index + num_warmups_;
    const auto it = std::upper_bound(turn_base_.begin(), turn_base_.end(), index);
    return static_cast<uint64_t>(it - turn_base_.begin() - 1) + num_warmups_;
  }
  if (index - n < num_warmups_) return index - n;
  return size();
}

size_t RequestLedger::outstanding(int32_t owner) const {
  if (owner < 0 || static_cast<size_t>(owner) >= outstanding_.size()) return 0;
  return outstanding_[owner];
}

std::optional<uint64_t> RequestLedger::NextDue(int64_t horizon_ns) const {
  const size_t n = size();
  uint64_t i;
  if (!reassign_.empty() &&
      (cursor_ >= n || offset_ns_[reassign_.front()] <= offset_ns_[cursor_])) {
    i = reassign_.front();
  } else if (cursor_ < n) {
    i = cursor_;
  } else {
    return std::nullopt;
  }
  if (offset_ns_[i] >= horizon_ns) return std::nullopt;
  return i;
}

uint8_t RequestLedger::Assign(uint64_t index, int32_t owner) {
  if (!reassign_.empty() && reassign_.front() == index) {
    reassign_.pop_front();
  } else {
    ++cursor_;  // index == cursor_ (NextDue)
  }
  state_[index] = State::kAssigned;
  owner_[index] = static_cast<int16_t>(owner);
  if (owner >= 0 && static_cast<size_t>(owner) < outstanding_.size()) ++outstanding_[owner];
  return attempt_[index];
}

surge::v1::RequestRecord RequestLedger::Finalize(uint64_t i, surge::v1::RequestRecord record) {
  const uint32_t turn = turns_done(i);
  record.set_index(WireIndex(i) + turn);
  if (is_warmup(i)) record.set_warmup(true);
  if (turn == 0) {
    record.set_planned_ns(offset_ns_[i]);
  } else if (!record.released()) {
    record.set_planned_ns(next_due_ns_[i]);  // never sent: its earliest due
  }
  if (has_sessions() && !is_warmup(i)) {
    const uint64_t wire = WireIndex(i) + turn;
    record.set_in_session(true);
    record.set_session(i - num_warmups_);
    record.set_turn(turn);
    record.set_think_ns(think_ns_[wire]);
    ++turns_done_[i];
    // The next turn is due its think time after this one's answer: the
    // worker says when; without its word, no sooner than this turn's due.
    if (turns_done_[i] < TurnsOf(i)) {
      next_due_ns_[i] = record.next_turn_due_ns() > 0 ? record.next_turn_due_ns()
                                                      : next_due_ns_[i] + think_ns_[wire + 1];
    }
  }
  ++final_count_;
  if (turns_done(i) >= TurnsOf(i) || !has_sessions()) {
    const int32_t owner = owner_[i];
    if (state_[i] == State::kAssigned && owner >= 0 &&
        static_cast<size_t>(owner) < outstanding_.size() && outstanding_[owner] > 0) {
      --outstanding_[owner];
    }
    state_[i] = State::kFinal;
  }
  return record;
}

void RequestLedger::EndTurns(uint64_t i, int32_t worker,
                             absl::FunctionRef<Ending(int64_t earliest_due_ns, uint32_t k)> how,
                             Emit emit) {
  int64_t due_ns = NextDueNs(i);
  for (uint32_t k = 0; state_[i] != State::kFinal; ++k) {
    if (k > 0) due_ns += think_ns_[WireIndex(i) + turns_done(i)];
    Ending e = how(due_ns, k);
    emit(Finalize(i, Made(i, worker, e.status, e.kind, std::move(e.error))));
  }
}

surge::v1::RequestRecord RequestLedger::Made(uint64_t i, int32_t worker,
                                             surge::v1::RequestStatus status,
                                             surge::v1::FailureKind kind, std::string error) const {
  surge::v1::RequestRecord r;
  r.set_index(WireIndex(i));
  r.set_attempt(attempt_[i]);
  r.set_worker(worker);
  SetFailure(r, status, kind, std::move(error));
  return r;
}

std::optional<surge::v1::RequestRecord> RequestLedger::Accept(
    int32_t from, const surge::v1::RequestRecord& record) {
  const uint64_t i = SlotOf(record.index());
  if (i >= size() || state_[i] != State::kAssigned || owner_[i] != from ||
      attempt_[i] != record.attempt() || record.index() != WireIndex(i) + turns_done(i)) {
    ++refused_;
    return std::nullopt;
  }
  return Finalize(i, record);
}

RequestLedger::TakeBackCounts RequestLedger::TakeBack(int32_t owner, int64_t may_have_sent_until_ns,
                                                      int64_t now_ns, bool may_reassign,
                                                      absl::string_view why, Emit emit) {
  TakeBackCounts counts;
  const int64_t reassign_after_ns = now_ns + kReassignMarginNs;
  for (uint64_t i = 0; i < cursor_; ++i) {
    if (state_[i] != State::kAssigned || owner_[i] != owner) continue;
    if (!Begun(i) && offset_ns_[i] > may_have_sent_until_ns && offset_ns_[i] > reassign_after_ns &&
        may_reassign) {
      Requeue(i);
      ++counts.reassigned;
      continue;
    }
    const bool begun = Begun(i);
    EndTurns(
        i, owner,
        [&](int64_t due_ns, uint32_t k) -> Ending {
          if (due_ns <= may_have_sent_until_ns) {
            ++counts.lost;
            return {surge::v1::LOST, surge::v1::FAILURE_KIND_SEND_UNKNOWN,
                    absl::StrCat("send_unknown: worker ", owner, " lost (", why, ")")};
          }
          ++counts.not_sent;
          if (begun || k > 0) {
            return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                    absl::StrCat("not_sent: session_lost: worker ", owner, " lost (", why, ")")};
          }
          return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                  absl::StrCat("not_sent: worker ", owner,
                               " lost before this request could be sent (", why, ")")};
        },
        emit);
  }
  if (static_cast<size_t>(owner) < outstanding_.size()) outstanding_[owner] = 0;
  SortReassign();
  return counts;
}

void RequestLedger::Requeue(uint64_t i) {
  const int32_t owner = owner_[i];
  if (owner >= 0 && static_cast<size_t>(owner) < outstanding_.size() && outstanding_[owner] > 0) {
    --outstanding_[owner];
  }
  state_[i] = State::kUnassigned;
  owner_[i] = -1;
  ++attempt_[i];
  reassign_.push_back(i);
  ++reassigned_;
}

void RequestLedger::SortReassign() {
  std::sort(reassign_.begin(), reassign_.end(), [this](uint64_t a, uint64_t b) {
    return offset_ns_[a] != offset_ns_[b] ? offset_ns_[a] < offset_ns_[b] : a < b;
  });
}

RequestLedger::TakeBackCounts RequestLedger::HandBack(int32_t owner,
                                                      const std::vector<HandedBack>& requests,
                                                      int64_t now_ns, bool may_reassign,
                                                      absl::string_view why, Emit emit) {
  TakeBackCounts counts;
  const int64_t reassign_after_ns = now_ns + kReassignMarginNs;
  for (const HandedBack& h : requests) {
    const uint64_t i = SlotOf(h.index);
    if (i >= size() || state_[i] != State::kAssigned || owner_[i] != owner ||
        attempt_[i] != h.attempt || h.index != WireIndex(i) + turns_done(i)) {
      continue;
    }
    if (!Begun(i) && offset_ns_[i] > reassign_after_ns && may_reassign) {
      Requeue(i);
      ++counts.reassigned;
      continue;
    }
    // The handed-back turn was never sent, nor any after it in its session.
    EndTurns(
        i, owner,
        [&](int64_t, uint32_t k) -> Ending {
          ++counts.not_sent;
          if (k > 0) {
            return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                    absl::StrCat("not_sent: session_lost: worker ", owner, " left (", why, ")")};
          }
          return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                  absl::StrCat("not_sent: worker ", owner,
                               " left before this request could be sent (", why, ")")};
        },
        emit);
  }
  SortReassign();
  return counts;
}

uint64_t RequestLedger::GiveUpIdle(int32_t owner, int64_t due_before_ns, Emit emit) {
  uint64_t given_up = 0;
  for (uint64_t i = 0; i < cursor_; ++i) {
    if (state_[i] != State::kAssigned || owner_[i] != owner || NextDueNs(i) > due_before_ns) {
      continue;
    }
    EndTurns(
        i, owner,
        [&](int64_t, uint32_t) -> Ending {
          ++given_up;
          return {surge::v1::LOST, surge::v1::FAILURE_KIND_RECORD_LOST,
                  absl::StrCat("record_lost: worker ", owner,
                               " has been idle without reporting this request")};
        },
        emit);
  }
  return given_up;
}

void RequestLedger::CloseUnassigned(absl::string_view reason, Emit emit) {
  const auto not_sent = [reason](int64_t, uint32_t) -> Ending {
    return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, std::string(reason)};
  };
  for (uint64_t i : reassign_) EndTurns(i, -1, not_sent, emit);
  reassign_.clear();
  for (; cursor_ < size(); ++cursor_) EndTurns(cursor_, -1, not_sent, emit);
}

void RequestLedger::CloseOpen(bool stopping, Emit emit) {
  for (uint64_t i = 0; i < size(); ++i) {
    if (state_[i] == State::kFinal) continue;
    const bool assigned = state_[i] == State::kAssigned;
    EndTurns(
        i, owner_[i],
        [&](int64_t, uint32_t k) -> Ending {
          if (!assigned) {
            return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, "not_sent: run_ended"};
          }
          if (k > 0) {
            return {surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                    "not_sent: session_ended: the run ended before this turn"};
          }
          if (stopping) {
            return {surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED,
                    "interrupted: no_record"};
          }
          return {surge::v1::LOST, surge::v1::FAILURE_KIND_LOST,
                  "lost: no_record_before_drain_deadline"};
        },
        emit);
  }
  // Nothing is left to assign.
  reassign_.clear();
  cursor_ = size();
}

}  // namespace surge::coordinator
