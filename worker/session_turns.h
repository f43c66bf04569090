// Multi-turn sessions on one worker (docs/SESSIONS.md). The coordinator
// assigns a session as its first turn carrying the later ones; this keeps
// every open session's later turns and its history (the prompts sent and
// the server's real answers) and, as each turn's record comes back, hands
// the send loop the next turn, due its think time after the answer ended
// (ns after t0 on the coordinator's clock, as every record time), with the
// whole history. A turn that did not get an answer, or a turn ending once
// the worker is closing, ends its session: each turn after it gets a
// NOT_SENT record, so every planned turn has exactly one record. Pure (no
// clock, no I/O); thread-safe: records come on the sender's I/O threads and
// the pacer thread, assignments on the socket thread.
#ifndef SURGE_WORKER_SESSION_TURNS_H_
#define SURGE_WORKER_SESSION_TURNS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"

namespace surge::worker {

class SessionTurns {
 public:
  // Gives assignments to the send loop (SendLoop::Enqueue).
  using Enqueue = std::function<void(std::vector<surge::v1::Assignment>)>;
  // Where every record goes on (the worker's outbox).
  using Forward = std::function<void(surge::v1::RequestRecord)>;

  // `max_sessions`: sessions open at once on this worker, 0 = no cap.
  SessionTurns(uint32_t max_sessions, int32_t worker_index, Enqueue enqueue, Forward forward);

  // Assignments from the coordinator, in planned order. A session start
  // opens its session (its later turns stay here) or, with max_sessions
  // open, waits here in arrival order until one ends; anything else passes.
  // Returns what goes to the send loop now.
  std::vector<surge::v1::Assignment> Admit(std::vector<surge::v1::Assignment> batch);

  // Every record of the send loop. A session turn's record loses its texts
  // (sent_prompt_text, answer_text: never sent to the coordinator), gets
  // its think_ns and, when the session goes on, next_turn_due_ns; a start
  // that waited for a session slot gets blocked_ns = its release − its
  // planned start. The record is forwarded before the next turn is
  // enqueued, so the coordinator always has turn k's record before turn
  // k + 1 can be sent.
  void OnRecord(surge::v1::RequestRecord record);

  // From now on no next turn is scheduled: a turn that ends afterwards ends
  // its session, its later turns NOT_SENT "not_sent: <reason> before this
  // turn". Returns the starts still waiting for a slot (never released).
  std::vector<surge::v1::Assignment> Close(const std::string& reason);

  // The records of an assignment that was never released: NOT_SENT
  // `error`; for a session turn also one per later turn of its session
  // (error "not_sent: session_ended: ..."), and the session is dropped.
  std::vector<surge::v1::RequestRecord> UnsentRecords(const surge::v1::Assignment& assignment,
                                                      const std::string& error);

  // Sessions open now, and starts waiting for a slot.
  size_t open() const;
  size_t waiting() const;

 private:
  struct Session {
    // Index of turn 0 (turn k is index + k), attempt, class parts.
    uint64_t first_index = 0;
    uint32_t attempt = 0;
    std::string model;
    std::vector<std::string> headers;
    // Turns 1..n-1 and the history so far.
    std::vector<surge::v1::SessionTurn> next_turns;
    std::vector<surge::v1::ChatMessage> history;
    // The start waited for a session slot.
    bool waited = false;
  };

  // What turn record.turn()'s record means for its open session `s`: the
  // next turn (into `next`), or the end (NOT_SENT records of the turns left
  // into `unsent`, and a waiting start admitted into `next`).
  void FollowLocked(Session& s, surge::v1::RequestRecord& record,
                    std::vector<surge::v1::RequestRecord>& unsent,
                    std::vector<surge::v1::Assignment>& next);
  // Opens the session of start `a` (moves its later turns here).
  void OpenLocked(surge::v1::Assignment& a, bool waited);
  // Turn `turn` (>= 1) of `s`, due at `due_ns`.
  surge::v1::Assignment NextTurn(const Session& s, uint64_t session, uint32_t turn,
                                 int64_t due_ns) const;
  // NOT_SENT records of turns `from`..n-1 of `s`, planned at `at_ns`.
  void AppendUnsent(const Session& s, uint64_t session, uint32_t from, int64_t at_ns,
                    const std::string& error, std::vector<surge::v1::RequestRecord>& out) const;
  // Drops session `session` and admits the earliest waiting start.
  void EndLocked(uint64_t session, std::vector<surge::v1::Assignment>& admitted);

  const uint32_t max_sessions_;
  const int32_t worker_index_;
  const Enqueue enqueue_;
  const Forward forward_;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Session> sessions_;  // by session index
  std::deque<surge::v1::Assignment> waiting_;
  bool closing_ = false;
  std::string close_reason_;
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_SESSION_TURNS_H_
