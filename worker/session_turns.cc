#include "worker/session_turns.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"

namespace surge::worker {
namespace {

bool IsSessionStart(const surge::v1::Assignment& a) {
  return a.in_session() && a.turn() == 0 && !a.warmup();
}

// Why a session ends after turn `turn`'s record.
std::string EndedBecause(const surge::v1::RequestRecord& r) {
  return absl::StrCat(
      "not_sent: session_ended: turn ", r.turn(), " of this session got no answer (",
      r.error().empty() ? surge::v1::RequestStatus_Name(r.status()) : r.error(), ")");
}

}  // namespace

SessionTurns::SessionTurns(uint32_t max_sessions, int32_t worker_index, Enqueue enqueue,
                           Forward forward)
    : max_sessions_(max_sessions),
      worker_index_(worker_index),
      enqueue_(std::move(enqueue)),
      forward_(std::move(forward)) {}

void SessionTurns::OpenLocked(surge::v1::Assignment& a, bool waited) {
  Session& s = sessions_[a.session()];
  s.first_index = a.index();
  s.attempt = a.attempt();
  s.model = a.model();
  s.headers.assign(a.headers().begin(), a.headers().end());
  s.next_turns.assign(std::make_move_iterator(a.mutable_next_turns()->begin()),
                      std::make_move_iterator(a.mutable_next_turns()->end()));
  s.history.clear();
  s.waited = waited;
  a.clear_next_turns();
}

std::vector<surge::v1::Assignment> SessionTurns::Admit(std::vector<surge::v1::Assignment> batch) {
  std::vector<surge::v1::Assignment> out;
  out.reserve(batch.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (surge::v1::Assignment& a : batch) {
    if (!IsSessionStart(a)) {
      out.push_back(std::move(a));
    } else if (closing_ ||
               (max_sessions_ > 0 && (sessions_.size() >= max_sessions_ || !waiting_.empty()))) {
      waiting_.push_back(std::move(a));
    } else {
      OpenLocked(a, /*waited=*/false);
      out.push_back(std::move(a));
    }
  }
  return out;
}

surge::v1::Assignment SessionTurns::NextTurn(const Session& s, uint64_t session, uint32_t turn,
                                             int64_t due_ns) const {
  const surge::v1::SessionTurn& t = s.next_turns[turn - 1];
  surge::v1::Assignment a;
  a.set_index(s.first_index + turn);
  a.set_offset_ns(due_ns);
  a.set_attempt(s.attempt);
  a.set_input_tokens(t.input_tokens());
  a.set_max_tokens(t.max_tokens());
  a.set_prompt_seed(t.prompt_seed());
  a.set_prompt_text(t.prompt_text());
  a.set_model(s.model);
  for (const std::string& h : s.headers) a.add_headers(h);
  a.set_in_session(true);
  a.set_session(session);
  a.set_turn(turn);
  for (const surge::v1::ChatMessage& m : s.history) *a.add_history() = m;
  return a;
}

void SessionTurns::AppendUnsent(const Session& s, uint64_t session, uint32_t from, int64_t at_ns,
                                const std::string& error,
                                std::vector<surge::v1::RequestRecord>& out) const {
  const uint32_t turns = static_cast<uint32_t>(s.next_turns.size()) + 1;
  for (uint32_t t = from; t < turns; ++t) {
    surge::v1::RequestRecord r;
    r.set_index(s.first_index + t);
    r.set_attempt(s.attempt);
    r.set_worker(worker_index_);
    r.set_planned_ns(at_ns);
    r.set_in_session(true);
    r.set_session(session);
    r.set_turn(t);
    if (t > 0) r.set_think_ns(s.next_turns[t - 1].think_ns());
    r.set_max_tokens(t > 0 ? s.next_turns[t - 1].max_tokens() : 0);
    SetFailure(r, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, error);
    out.push_back(std::move(r));
  }
}

void SessionTurns::EndLocked(uint64_t session, std::vector<surge::v1::Assignment>& admitted) {
  sessions_.erase(session);
  while (!closing_ && !waiting_.empty() &&
         (max_sessions_ == 0 || sessions_.size() < max_sessions_)) {
    surge::v1::Assignment a = std::move(waiting_.front());
    waiting_.pop_front();
    OpenLocked(a, /*waited=*/true);
    admitted.push_back(std::move(a));
  }
}

void SessionTurns::OnRecord(surge::v1::RequestRecord record) {
  if (!record.in_session() || record.warmup()) {
    forward_(std::move(record));
    return;
  }
  std::vector<surge::v1::RequestRecord> unsent;
  std::vector<surge::v1::Assignment> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(record.session());
    if (it != sessions_.end()) FollowLocked(it->second, record, unsent, next);
    record.clear_sent_prompt_text();
    record.clear_answer_text();
  }
  forward_(std::move(record));
  for (surge::v1::RequestRecord& r : unsent) forward_(std::move(r));
  if (!next.empty()) enqueue_(std::move(next));
}

void SessionTurns::FollowLocked(Session& s, surge::v1::RequestRecord& record,
                                std::vector<surge::v1::RequestRecord>& unsent,
                                std::vector<surge::v1::Assignment>& next) {
  const uint32_t turn = record.turn();
  if (turn > 0 && turn <= s.next_turns.size())
    record.set_think_ns(s.next_turns[turn - 1].think_ns());
  if (turn == 0 && s.waited && record.released()) {
    record.set_blocked_ns(
        std::max(record.blocked_ns(), record.released_ns() - record.planned_ns()));
  }
  const bool has_next = turn < s.next_turns.size();
  const bool answered = record.status() == surge::v1::OK;
  if (has_next && answered && !closing_) {
    // The history grows by this turn's prompt and its real answer.
    surge::v1::ChatMessage user;
    user.set_role("user");
    user.set_content(std::move(*record.mutable_sent_prompt_text()));
    surge::v1::ChatMessage assistant;
    assistant.set_role("assistant");
    assistant.set_content(std::move(*record.mutable_answer_text()));
    s.history.push_back(std::move(user));
    s.history.push_back(std::move(assistant));
    const int64_t due_ns = record.sent_ns() + record.e2el_ns() + s.next_turns[turn].think_ns();
    record.set_next_turn_due_ns(due_ns);
    next.push_back(NextTurn(s, record.session(), turn + 1, due_ns));
  } else if (has_next) {
    const int64_t at_ns = record.sent() ? record.sent_ns() + record.e2el_ns()
                                        : std::max(record.released_ns(), record.planned_ns());
    AppendUnsent(s, record.session(), turn + 1, at_ns,
                 closing_ ? absl::StrCat("not_sent: ", close_reason_, " before this turn")
                          : EndedBecause(record),
                 unsent);
    EndLocked(record.session(), next);
  } else {
    EndLocked(record.session(), next);
  }
}

std::vector<surge::v1::Assignment> SessionTurns::Close(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = true;
  close_reason_ = reason.empty() ? "stopped" : reason;
  std::vector<surge::v1::Assignment> out(std::make_move_iterator(waiting_.begin()),
                                         std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  return out;
}

std::vector<surge::v1::RequestRecord> SessionTurns::UnsentRecords(
    const surge::v1::Assignment& assignment, const std::string& error) {
  std::vector<surge::v1::RequestRecord> out;
  surge::v1::RequestRecord r;
  r.set_index(assignment.index());
  r.set_attempt(assignment.attempt());
  r.set_worker(worker_index_);
  r.set_planned_ns(assignment.offset_ns());
  if (assignment.warmup()) r.set_warmup(true);
  if (assignment.in_session()) {
    r.set_in_session(true);
    r.set_session(assignment.session());
    r.set_turn(assignment.turn());
  }
  SetFailure(r, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, error);
  out.push_back(std::move(r));
  if (!assignment.in_session() || assignment.warmup()) return out;
  std::lock_guard<std::mutex> lock(mu_);
  Session opened;
  const Session* s = nullptr;
  if (auto it = sessions_.find(assignment.session()); it != sessions_.end()) {
    s = &it->second;
  } else if (assignment.turn() == 0) {
    // A start that waited for a slot: its later turns are in the assignment.
    opened.first_index = assignment.index();
    opened.attempt = assignment.attempt();
    opened.next_turns.assign(assignment.next_turns().begin(), assignment.next_turns().end());
    s = &opened;
  }
  if (s == nullptr) return out;
  AppendUnsent(*s, assignment.session(), assignment.turn() + 1, assignment.offset_ns(),
               absl::StrCat("not_sent: session_ended: turn ", assignment.turn(),
                            " of this session was not sent (", error, ")"),
               out);
  sessions_.erase(assignment.session());
  return out;
}

size_t SessionTurns::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

size_t SessionTurns::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

}  // namespace surge::worker
