// The pacer helps the sender's I/O while it waits for a release, on
// simulated time: ready completions run only within assist_window of the
// deadline and start only before assist_margin; the release itself stays
// exactly at its deadline; a sender that takes no help is never asked.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "tests/testing/fake_request_sender.h"
#include "tests/testing/simulated_clock.h"
#include "worker/send_loop.h"

namespace surge::worker {
namespace {

using surge::testing::AutoAdvanceClock;
using surge::testing::FakeRequestSender;

constexpr auto& Make = surge::testing::MakeAssignment;
constexpr int64_t kUs = 1000;

// A FakeRequestSender with a queue of ready completions, each taking a
// given time on the simulated clock when the pacer runs it.
class HelpedSender final : public RequestSender {
 public:
  explicit HelpedSender(AutoAdvanceClock& clock, bool takes_help = true)
      : clock_(clock), inner_(clock), takes_help_(takes_help) {}

  void Send(const surge::v1::Assignment& a, SendCallback on_done) override {
    inner_.Send(a, std::move(on_done));
  }
  size_t inflight() const override { return inner_.inflight(); }
  void Shutdown(std::chrono::milliseconds drain) override { inner_.Shutdown(drain); }
  bool TakesHelp() const override { return takes_help_; }
  bool RunReadyWork() override {
    const int64_t now = ToNanos(clock_.Now());
    polls_.push_back(now);
    if (work_ns_.empty()) return false;
    const int64_t took = work_ns_.front();
    work_ns_.pop_front();
    ran_.push_back({now, now + took});
    clock_.SleepUntil(FromNanos(now + took));
    return true;
  }

  struct Ran {
    int64_t start_ns;
    int64_t end_ns;
  };
  void AddWork(int n, int64_t each_ns) { work_ns_.insert(work_ns_.end(), n, each_ns); }
  const std::vector<Ran>& ran() const { return ran_; }
  const std::vector<int64_t>& polls() const { return polls_; }
  std::vector<FakeRequestSender::Sent> sent() const { return inner_.sent(); }

 private:
  AutoAdvanceClock& clock_;
  FakeRequestSender inner_;
  const bool takes_help_;
  std::deque<int64_t> work_ns_;
  std::vector<Ran> ran_;
  std::vector<int64_t> polls_;
};

SendLoopOptions AssistOptions() {
  SendLoopOptions options;
  options.prepare_lead = std::chrono::microseconds(0);
  options.assist_window = std::chrono::microseconds(200);
  options.assist_margin = std::chrono::microseconds(20);
  options.assist_poll = std::chrono::microseconds(5);
  return options;
}

TEST(SendLoopAssistTest, ReadyCompletionsRunInTheWindowAndStopAtTheMargin) {
  AutoAdvanceClock clock;
  HelpedSender sender(clock);
  sender.AddWork(100, 10 * kUs);  // more than the window holds
  SendLoop loop(clock, sender, AssistOptions(), [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now()) + 1'000'000;
  const int64_t due = t0 + 10'000'000;
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10'000'000)});
  // Run until the one release, then stop.
  std::thread pacer([&] { loop.Run(); });
  while (sender.sent().empty()) std::this_thread::yield();
  loop.Stop();
  pacer.join();
  const std::vector<FakeRequestSender::Sent> sent = sender.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].at_ns, due);  // the release is exactly on time
  // 10 µs completions from 200 µs before the deadline; the last one starts
  // 30 µs before it and ends at the 20 µs margin: 18 of them.
  const auto& ran = sender.ran();
  ASSERT_EQ(ran.size(), 18u);
  EXPECT_EQ(ran.front().start_ns, due - 200 * kUs);
  EXPECT_EQ(ran.back().start_ns, due - 30 * kUs);
  EXPECT_EQ(ran.back().end_ns, due - 20 * kUs);
  for (const auto& r : ran) EXPECT_LT(r.start_ns, due - 20 * kUs);
}

TEST(SendLoopAssistTest, WithNothingReadyThePacerLooksEveryPoll) {
  AutoAdvanceClock clock;
  HelpedSender sender(clock);
  SendLoop loop(clock, sender, AssistOptions(), [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now()) + 1'000'000;
  const int64_t due = t0 + 10'000'000;
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10'000'000)});
  std::thread pacer([&] { loop.Run(); });
  while (sender.sent().empty()) std::this_thread::yield();
  loop.Stop();
  pacer.join();
  ASSERT_EQ(sender.sent().size(), 1u);
  EXPECT_EQ(sender.sent()[0].at_ns, due);
  // Looks at due − 200, −195, ..., −25 µs: 36 looks, none past the margin.
  const auto& polls = sender.polls();
  ASSERT_EQ(polls.size(), 36u);
  EXPECT_EQ(polls.front(), due - 200 * kUs);
  EXPECT_EQ(polls.back(), due - 25 * kUs);
  EXPECT_TRUE(sender.ran().empty());
}

TEST(SendLoopAssistTest, ASenderThatTakesNoHelpIsNeverAsked) {
  AutoAdvanceClock clock;
  HelpedSender sender(clock, /*takes_help=*/false);
  sender.AddWork(10, 10 * kUs);
  SendLoop loop(clock, sender, AssistOptions(), [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now()) + 1'000'000;
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10'000'000)});
  std::thread pacer([&] { loop.Run(); });
  while (sender.sent().empty()) std::this_thread::yield();
  loop.Stop();
  pacer.join();
  EXPECT_EQ(sender.sent()[0].at_ns, t0 + 10'000'000);
  EXPECT_TRUE(sender.polls().empty());
}

TEST(SendLoopAssistTest, MarginZeroTurnsTheHelpOff) {
  AutoAdvanceClock clock;
  HelpedSender sender(clock);
  sender.AddWork(10, 10 * kUs);
  SendLoopOptions options = AssistOptions();
  options.assist_margin = std::chrono::microseconds(0);
  SendLoop loop(clock, sender, options, [](surge::v1::RequestRecord) {});
  const int64_t t0 = ToNanos(clock.Now()) + 1'000'000;
  loop.SetStart(t0);
  loop.Enqueue({Make(0, 10'000'000)});
  std::thread pacer([&] { loop.Run(); });
  while (sender.sent().empty()) std::this_thread::yield();
  loop.Stop();
  pacer.join();
  EXPECT_EQ(sender.sent()[0].at_ns, t0 + 10'000'000);
  EXPECT_TRUE(sender.polls().empty());
}

}  // namespace
}  // namespace surge::worker
