// A worker's multi-turn sessions (docs/SESSIONS.md) on their own: each
// turn's record schedules the next turn its think time after the answer
// ended, with the whole history; a turn without an answer, or one ending
// while the worker closes, ends its session with one record per turn left;
// max_sessions holds starts back and marks them blocked.
#include "worker/session_turns.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace surge::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
constexpr int64_t kMs = 1000 * 1000;

// Session `session` starting at `offset_ns`, first wire index `index`, with
// turns after the first of the given think times (ms) and prompt texts "p1",
// "p2", ...
surge::v1::Assignment Start(uint64_t session, uint64_t index, int64_t offset_ns,
                            std::vector<int64_t> think_ms) {
  surge::v1::Assignment a;
  a.set_index(index);
  a.set_offset_ns(offset_ns);
  a.set_in_session(true);
  a.set_session(session);
  a.set_turn(0);
  a.set_prompt_text("p0");
  a.set_model("lora-a");
  for (size_t k = 0; k < think_ms.size(); ++k) {
    surge::v1::SessionTurn* t = a.add_next_turns();
    t->set_prompt_text("p" + std::to_string(k + 1));
    t->set_max_tokens(static_cast<uint32_t>(10 + k));
    t->set_think_ns(think_ms[k] * kMs);
  }
  return a;
}

// The record of `a` answered with `answer` after being sent at `sent_ns`
// and taking `e2el_ns`.
surge::v1::RequestRecord Answered(const surge::v1::Assignment& a, int64_t sent_ns, int64_t e2el_ns,
                                  const std::string& answer) {
  surge::v1::RequestRecord r;
  r.set_index(a.index());
  r.set_attempt(a.attempt());
  r.set_in_session(true);
  r.set_session(a.session());
  r.set_turn(a.turn());
  r.set_planned_ns(a.offset_ns());
  r.set_status(surge::v1::OK);
  r.set_released(true);
  r.set_released_ns(sent_ns);
  r.set_sent(true);
  r.set_sent_ns(sent_ns);
  r.set_e2el_ns(e2el_ns);
  r.set_sent_prompt_text(a.prompt_text());
  r.set_answer_text(answer);
  return r;
}

struct Rig {
  std::vector<surge::v1::Assignment> enqueued;
  std::vector<surge::v1::RequestRecord> forwarded;
  SessionTurns turns;
  explicit Rig(uint32_t max_sessions = 0)
      : turns(
            max_sessions, /*worker_index=*/3,
            [this](std::vector<surge::v1::Assignment> a) {
              for (auto& x : a) enqueued.push_back(std::move(x));
            },
            [this](surge::v1::RequestRecord r) { forwarded.push_back(std::move(r)); }) {}
};

TEST(SessionTurnsTest, EachTurnIsDueItsThinkTimeAfterTheAnswerWithTheWholeHistory) {
  Rig rig;
  std::vector<surge::v1::Assignment> out = rig.turns.Admit({Start(7, 20, 100 * kMs, {500, 250})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].next_turns_size(), 0);  // the later turns stay with the session
  EXPECT_EQ(rig.turns.open(), 1u);

  rig.turns.OnRecord(Answered(out[0], 101 * kMs, 40 * kMs, " tok tok"));
  ASSERT_EQ(rig.forwarded.size(), 1u);
  EXPECT_TRUE(rig.forwarded[0].sent_prompt_text().empty());
  EXPECT_TRUE(rig.forwarded[0].answer_text().empty());
  EXPECT_EQ(rig.forwarded[0].next_turn_due_ns(), (101 + 40 + 500) * kMs);
  ASSERT_EQ(rig.enqueued.size(), 1u);
  const surge::v1::Assignment& t1 = rig.enqueued[0];
  EXPECT_EQ(t1.index(), 21u);
  EXPECT_EQ(t1.turn(), 1u);
  EXPECT_EQ(t1.offset_ns(), (101 + 40 + 500) * kMs);
  EXPECT_EQ(t1.prompt_text(), "p1");
  EXPECT_EQ(t1.max_tokens(), 10u);
  EXPECT_EQ(t1.model(), "lora-a");
  ASSERT_EQ(t1.history_size(), 2);
  EXPECT_EQ(t1.history(0).role(), "user");
  EXPECT_EQ(t1.history(0).content(), "p0");
  EXPECT_EQ(t1.history(1).role(), "assistant");
  EXPECT_EQ(t1.history(1).content(), " tok tok");

  rig.turns.OnRecord(Answered(t1, 650 * kMs, 10 * kMs, " tok"));
  ASSERT_EQ(rig.enqueued.size(), 2u);
  const surge::v1::Assignment& t2 = rig.enqueued[1];
  EXPECT_EQ(t2.index(), 22u);
  EXPECT_EQ(t2.offset_ns(), (650 + 10 + 250) * kMs);
  ASSERT_EQ(t2.history_size(), 4);
  EXPECT_EQ(t2.history(2).content(), "p1");
  EXPECT_EQ(t2.history(3).content(), " tok");
  EXPECT_EQ(rig.forwarded[1].think_ns(), 500 * kMs);

  rig.turns.OnRecord(Answered(t2, 920 * kMs, 10 * kMs, "x"));
  EXPECT_EQ(rig.forwarded.back().next_turn_due_ns(), 0);  // the last turn
  EXPECT_EQ(rig.enqueued.size(), 2u);
  EXPECT_EQ(rig.turns.open(), 0u);
}

TEST(SessionTurnsTest, ATurnWithoutAnAnswerEndsItsSessionWithARecordPerTurnLeft) {
  Rig rig;
  std::vector<surge::v1::Assignment> out = rig.turns.Admit({Start(2, 5, 0, {100, 100, 100})});
  surge::v1::RequestRecord failed = Answered(out[0], kMs, 0, "");
  failed.set_status(surge::v1::FAILED);
  failed.set_error("http_500: boom");
  rig.turns.OnRecord(failed);
  EXPECT_TRUE(rig.enqueued.empty());
  ASSERT_EQ(rig.forwarded.size(), 4u);
  for (size_t k = 1; k < 4; ++k) {
    EXPECT_EQ(rig.forwarded[k].index(), 5 + k);
    EXPECT_EQ(rig.forwarded[k].turn(), k);
    EXPECT_EQ(rig.forwarded[k].worker(), 3);
    EXPECT_EQ(rig.forwarded[k].status(), surge::v1::NOT_SENT);
    EXPECT_THAT(rig.forwarded[k].error(), StartsWith("not_sent: session_ended: turn 0"));
    EXPECT_THAT(rig.forwarded[k].error(), HasSubstr("http_500"));
  }
  EXPECT_EQ(rig.turns.open(), 0u);
}

TEST(SessionTurnsTest, ATurnEndingWhileClosingSchedulesNothingMore) {
  Rig rig;
  std::vector<surge::v1::Assignment> out = rig.turns.Admit({Start(0, 0, 0, {100})});
  EXPECT_TRUE(rig.turns.Close("SIGTERM").empty());
  rig.turns.OnRecord(Answered(out[0], kMs, kMs, "a"));
  EXPECT_TRUE(rig.enqueued.empty());
  ASSERT_EQ(rig.forwarded.size(), 2u);
  EXPECT_EQ(rig.forwarded[1].error(), "not_sent: SIGTERM before this turn");
}

TEST(SessionTurnsTest, MaxSessionsHoldsStartsBackAndMarksThemBlocked) {
  Rig rig(/*max_sessions=*/1);
  std::vector<surge::v1::Assignment> out =
      rig.turns.Admit({Start(0, 0, 100 * kMs, {}), Start(1, 1, 200 * kMs, {})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].session(), 0u);
  EXPECT_EQ(rig.turns.waiting(), 1u);
  rig.turns.OnRecord(Answered(out[0], 100 * kMs, 300 * kMs, "a"));  // ends at 400 ms
  ASSERT_EQ(rig.enqueued.size(), 1u);                               // session 1 admitted
  EXPECT_EQ(rig.enqueued[0].session(), 1u);
  EXPECT_EQ(rig.turns.waiting(), 0u);
  rig.turns.OnRecord(Answered(rig.enqueued[0], 401 * kMs, kMs, "b"));
  EXPECT_EQ(rig.forwarded.back().blocked_ns(), 201 * kMs);  // released 401 − planned 200
}

TEST(SessionTurnsTest, UnsentRecordsCoverTheTurnAndTheRestOfItsSession) {
  Rig rig;
  std::vector<surge::v1::Assignment> out = rig.turns.Admit({Start(4, 10, 0, {100, 100})});
  rig.turns.OnRecord(Answered(out[0], kMs, kMs, "a"));
  ASSERT_EQ(rig.enqueued.size(), 1u);
  const std::vector<surge::v1::RequestRecord> unsent =
      rig.turns.UnsentRecords(rig.enqueued[0], "not_sent: stopped");
  ASSERT_EQ(unsent.size(), 2u);
  EXPECT_EQ(unsent[0].index(), 11u);
  EXPECT_EQ(unsent[0].error(), "not_sent: stopped");
  EXPECT_EQ(unsent[1].index(), 12u);
  EXPECT_THAT(unsent[1].error(), StartsWith("not_sent: session_ended: turn 1"));
  EXPECT_EQ(rig.turns.open(), 0u);
  // A start never released, with its turns still in the assignment.
  EXPECT_EQ(rig.turns.UnsentRecords(Start(5, 13, 0, {1, 1}), "not_sent: stopped").size(), 3u);
  // Anything else: one record.
  surge::v1::Assignment single;
  single.set_index(99);
  EXPECT_EQ(rig.turns.UnsentRecords(single, "not_sent: stopped").size(), 1u);
}

}  // namespace
}  // namespace surge::worker
