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

uint64_t RequestLedger::SlotOf(uint64_t index) const {
  const uint64_t n = plan_size();
  if (index < n) return index + num_warmups_;
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
  const int32_t owner = owner_[i];
  if (state_[i] == State::kAssigned && owner >= 0 &&
      static_cast<size_t>(owner) < outstanding_.size() && outstanding_[owner] > 0) {
    --outstanding_[owner];
  }
  state_[i] = State::kFinal;
  record.set_index(WireIndex(i));
  if (is_warmup(i)) record.set_warmup(true);
  record.set_planned_ns(offset_ns_[i]);
  ++final_count_;
  return record;
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
      attempt_[i] != record.attempt()) {
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
    if (offset_ns_[i] <= may_have_sent_until_ns) {
      emit(Finalize(i, Made(i, owner, surge::v1::LOST, surge::v1::FAILURE_KIND_SEND_UNKNOWN,
                         absl::StrCat("send_unknown: worker ", owner, " lost (", why, ")"))));
      ++counts.lost;
    } else if (offset_ns_[i] > reassign_after_ns && may_reassign) {
      Requeue(i);
      ++counts.reassigned;
    } else {
      emit(Finalize(i, Made(i, owner, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                         absl::StrCat("not_sent: worker ", owner,
                                      " lost before this request could be sent (", why, ")"))));
      ++counts.not_sent;
    }
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
        attempt_[i] != h.attempt) {
      continue;
    }
    if (offset_ns_[i] > reassign_after_ns && may_reassign) {
      Requeue(i);
      ++counts.reassigned;
    } else {
      emit(Finalize(i, Made(i, owner, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                            absl::StrCat("not_sent: worker ", owner,
                                         " left before this request could be sent (", why, ")"))));
      ++counts.not_sent;
    }
  }
  SortReassign();
  return counts;
}

uint64_t RequestLedger::GiveUpIdle(int32_t owner, int64_t due_before_ns, Emit emit) {
  uint64_t given_up = 0;
  for (uint64_t i = 0; i < cursor_; ++i) {
    if (state_[i] != State::kAssigned || owner_[i] != owner || offset_ns_[i] > due_before_ns) {
      continue;
    }
    emit(Finalize(i, Made(i, owner, surge::v1::LOST, surge::v1::FAILURE_KIND_RECORD_LOST,
                       absl::StrCat("record_lost: worker ", owner,
                                    " has been idle without reporting this request"))));
    ++given_up;
  }
  return given_up;
}

void RequestLedger::CloseUnassigned(absl::string_view reason, Emit emit) {
  for (uint64_t i : reassign_) {
    emit(Finalize(
        i, Made(i, -1, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, std::string(reason))));
  }
  reassign_.clear();
  for (; cursor_ < size(); ++cursor_) {
    emit(Finalize(cursor_, Made(cursor_, -1, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                       std::string(reason))));
  }
}

void RequestLedger::CloseOpen(bool stopping, Emit emit) {
  for (uint64_t i = 0; i < size(); ++i) {
    if (state_[i] == State::kFinal) continue;
    if (state_[i] != State::kAssigned) {
      emit(Finalize(i, Made(i, owner_[i], surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                         "not_sent: run_ended")));
    } else if (stopping) {
      emit(Finalize(i, Made(i, owner_[i], surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED,
                         "interrupted: no_record")));
    } else {
      emit(Finalize(i, Made(i, owner_[i], surge::v1::LOST, surge::v1::FAILURE_KIND_LOST,
                         "lost: no_record_before_drain_deadline")));
    }
  }
  // Nothing is left to assign.
  reassign_.clear();
  cursor_ = size();
}

}  // namespace surge::coordinator
