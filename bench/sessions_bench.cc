// Benchmark (not a test): multi-turn sessions (docs/SESSIONS.md), the
// figures in docs/PERFORMANCE.md "Sessions".
//
//  coordinator: the coordinator's state for --sessions open sessions (the
//    synthetic session source, each session's turns and think times, the
//    ledger with every session assigned and begun): peak RSS and bytes per
//    session.
//  worker: one worker's pacer (SendLoop) and sessions (SessionTurns) with
//    --worker_sessions sessions open at once, each of --turns turns, think
//    times exponential of mean --think_ms, every answer --answer_ms after
//    its send: the lateness of each later turn (send − its due time) on
//    simulated time (exact: what the pacer's own rules cost) and on the
//    real clock (what this machine adds).
//
// Usage: sessions_bench [--sessions=100000] [--turns=4] [--worker_sessions=10000]
//   [--think_ms=1000] [--answer_ms=50] [--start_s=2] [--seed=1] [--mode=all|coordinator|sim|real]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/peak_rss.h"
#include "common/clock.h"
#include "common/stats.h"
#include "coordinator/dataset/session_source.h"
#include "coordinator/dataset/session_starts.h"
#include "coordinator/dispatch/request_ledger.h"
#include "surge/v1/config.pb.h"
#include "worker/send_loop.h"
#include "worker/session_turns.h"

namespace {

struct Flags {
  uint64_t sessions = 100000;
  uint32_t turns = 4;
  uint64_t worker_sessions = 10000;
  double think_ms = 1000;
  double answer_ms = 50;
  double start_s = 2;
  uint64_t seed = 1;
  std::string mode = "all";
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const size_t n = std::strlen(name);
      return std::strncmp(a, name, n) == 0 && a[n] == '=' ? a + n + 1 : nullptr;
    };
    if (const char* v = value("--sessions")) {
      f.sessions = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--turns")) {
      f.turns = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (const char* v = value("--worker_sessions")) {
      f.worker_sessions = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--think_ms")) {
      f.think_ms = std::strtod(v, nullptr);
    } else if (const char* v = value("--answer_ms")) {
      f.answer_ms = std::strtod(v, nullptr);
    } else if (const char* v = value("--start_s")) {
      f.start_s = std::strtod(v, nullptr);
    } else if (const char* v = value("--seed")) {
      f.seed = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--mode")) {
      f.mode = v;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a);
      return false;
    }
  }
  return f.turns >= 1 && f.sessions >= 1 && f.worker_sessions >= 1 && f.answer_ms > 0;
}

// The coordinator's per-session state: source, shape and ledger, every
// session assigned and its first turn recorded.
void CoordinatorMemory(const Flags& f) {
  const double before_mb = surge::bench::PeakRssMb();
  const auto start = std::chrono::steady_clock::now();
  surge::v1::DatasetConfig dataset;
  dataset.set_dataset_name("synthetic");
  dataset.set_random_input_len(256);
  dataset.set_random_output_len(64);
  surge::v1::SessionConfig config;
  config.set_multi_turn(true);
  config.set_session_turns(std::to_string(f.turns));
  config.set_think_time_dist("exponential");
  config.set_think_time_mean_s(f.think_ms / 1e3);
  auto source = surge::coordinator::MakeSessionSource(dataset, config, f.sessions, f.seed);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.status().ToString().c_str());
    std::exit(1);
  }
  surge::coordinator::SessionShape shape = surge::coordinator::ShapeOf(**source);
  std::vector<int64_t> offsets(f.sessions);
  for (uint64_t p = 0; p < f.sessions; ++p) offsets[p] = static_cast<int64_t>(p) * 10000;
  surge::coordinator::RequestLedger ledger(std::move(offsets), 8);
  ledger.SetSessions(std::move(shape.turns), std::move(shape.think_ns));
  int owner = 0;
  while (auto i = ledger.NextDue(INT64_MAX)) {
    ledger.Assign(*i, owner);
    surge::v1::RequestRecord r;
    r.set_index(ledger.WireIndex(*i));
    r.set_status(surge::v1::OK);
    r.set_sent(true);
    r.set_released(true);
    r.set_next_turn_due_ns(ledger.offset_ns(*i) + 1000000000);
    if (!ledger.Accept(owner, r).has_value()) std::exit(1);
    owner = (owner + 1) % 8;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double after_mb = surge::bench::PeakRssMb();
  std::printf(
      "coordinator: %llu open sessions of %u turns: peak RSS %.1f MB (+%.1f MB), %.0f bytes per "
      "session, built in %.3f s\n",
      static_cast<unsigned long long>(f.sessions), f.turns, after_mb, after_mb - before_mb,
      (after_mb - before_mb) * 1048576.0 / static_cast<double>(f.sessions), seconds);
}

// Answers each send `answer_ns` later: on simulated time from the clock's
// sleeps (SimEventClock), on real time from a thread of its own.
class DelayedSender final : public surge::worker::RequestSender {
 public:
  using Deliver = std::function<void(int64_t due_ns, std::function<void()> done)>;
  DelayedSender(surge::Clock& clock, int64_t answer_ns, Deliver deliver)
      : clock_(clock), answer_ns_(answer_ns), deliver_(std::move(deliver)) {}
  void Send(const surge::v1::Assignment& a, surge::worker::SendCallback on_done) override {
    const int64_t now = surge::ToNanos(clock_.Now());
    surge::v1::RequestRecord r;
    r.set_index(a.index());
    r.set_attempt(a.attempt());
    r.set_sent(true);
    r.set_sent_ns(now);
    r.set_status(surge::v1::OK);
    r.set_ttft_ns(answer_ns_ / 2);
    r.set_e2el_ns(answer_ns_);
    r.set_sent_prompt_text(a.prompt_text());
    r.set_answer_text(" tok tok tok");
    ++inflight_;
    deliver_(now + answer_ns_, [this, r = std::move(r), done = std::move(on_done)]() mutable {
      --inflight_;
      done(std::move(r));
    });
  }
  size_t inflight() const override { return inflight_.load(); }
  void Shutdown(std::chrono::milliseconds) override {}

 private:
  surge::Clock& clock_;
  const int64_t answer_ns_;
  const Deliver deliver_;
  std::atomic<size_t> inflight_{0};
};

// Simulated time for one thread (the pacer): every sleep first runs the
// answers due before its deadline, each at its own instant.
class SimEventClock final : public surge::Clock {
 public:
  TimePoint Now() override { return now_; }
  std::chrono::system_clock::time_point WallNow() override { return {}; }
  void SleepUntil(TimePoint deadline) override { RunUntil(deadline); }
  void SleepUntilCoarse(TimePoint deadline) override { RunUntil(deadline); }
  bool Await(surge::ClockCondition&, std::unique_lock<std::mutex>&, absl::FunctionRef<bool()> done,
             TimePoint deadline) override {
    if (done()) return true;
    RunUntil(deadline);
    return done();
  }
  void At(int64_t due_ns, std::function<void()> fn) { events_.push({due_ns, std::move(fn)}); }

 private:
  struct Event {
    int64_t due_ns;
    std::function<void()> fn;
    bool operator>(const Event& o) const { return due_ns > o.due_ns; }
  };
  void RunUntil(TimePoint deadline) {
    while (!events_.empty() && events_.top().due_ns <= surge::ToNanos(deadline)) {
      Event e = events_.top();
      events_.pop();
      now_ = std::max(now_, surge::FromNanos(e.due_ns));
      e.fn();
    }
    now_ = std::max(now_, deadline);
  }
  TimePoint now_ = TimePoint(std::chrono::seconds(1000));
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
};

// Real time: one thread runs each answer at its due instant.
class AnswerThread {
 public:
  explicit AnswerThread(surge::Clock& clock) : clock_(clock), thread_([this] { Loop(); }) {}
  ~AnswerThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void At(int64_t due_ns, std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push({due_ns, std::move(fn)});
    }
    cv_.notify_all();
  }

 private:
  struct Event {
    int64_t due_ns;
    std::function<void()> fn;
    bool operator>(const Event& o) const { return due_ns > o.due_ns; }
  };
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (events_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const int64_t now = surge::ToNanos(clock_.Now());
      if (events_.top().due_ns > now) {
        cv_.wait_for(lock, std::chrono::nanoseconds(events_.top().due_ns - now));
        continue;
      }
      Event e = events_.top();
      events_.pop();
      lock.unlock();
      e.fn();
      lock.lock();
    }
  }
  surge::Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  bool stop_ = false;
  std::thread thread_;
};

// The sessions' starts over start_s seconds, each with turns − 1 later
// turns and exponential think times.
std::vector<surge::v1::Assignment> Starts(const Flags& f) {
  std::mt19937_64 rng(f.seed);
  std::exponential_distribution<double> think(1.0 / (f.think_ms * 1e6));
  std::vector<surge::v1::Assignment> out;
  for (uint64_t s = 0; s < f.worker_sessions; ++s) {
    surge::v1::Assignment a;
    a.set_index(s * f.turns);
    a.set_offset_ns(static_cast<int64_t>(f.start_s * 1e9 * static_cast<double>(s) /
                                         static_cast<double>(f.worker_sessions)));
    a.set_in_session(true);
    a.set_session(s);
    a.set_prompt_text("a question of some words");
    for (uint32_t k = 1; k < f.turns; ++k) {
      surge::v1::SessionTurn* t = a.add_next_turns();
      t->set_prompt_text("and another question");
      t->set_max_tokens(16);
      t->set_think_ns(static_cast<int64_t>(think(rng)));
    }
    out.push_back(std::move(a));
  }
  return out;
}

struct TurnResult {
  std::vector<double> start_lateness_ms;
  std::vector<double> turn_lateness_ms;
  size_t peak_open = 0;
  uint64_t records = 0;
};

void Print(const char* clock_name, const Flags& f, const TurnResult& r, double seconds) {
  auto row = [](const char* what, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    std::printf("  %-12s n %7zu  p50 %8.4f  p99 %8.4f  max %8.4f ms\n", what, ms.size(),
                surge::PercentileOfSorted(ms, 50), surge::PercentileOfSorted(ms, 99),
                ms.empty() ? 0.0 : ms.back());
  };
  std::printf(
      "worker (%s): %llu sessions of %u turns, think exp mean %.0f ms, answer %.0f ms: %llu "
      "records, peak %zu open sessions, %.2f s\n",
      clock_name, static_cast<unsigned long long>(f.worker_sessions), f.turns, f.think_ms,
      f.answer_ms, static_cast<unsigned long long>(r.records), r.peak_open, seconds);
  row("starts", r.start_lateness_ms);
  row("later turns", r.turn_lateness_ms);
}

// One pacer and its sessions until every turn has its record.
template <class Scheduler>
TurnResult RunWorker(const Flags& f, surge::Clock& clock, Scheduler& scheduler) {
  TurnResult result;
  std::mutex mu;
  const uint64_t expected = f.worker_sessions * f.turns;
  DelayedSender sender(
      clock, static_cast<int64_t>(f.answer_ms * 1e6),
      [&](int64_t due, std::function<void()> done) { scheduler.At(due, std::move(done)); });
  std::unique_ptr<surge::worker::SendLoop> loop;
  surge::worker::SessionTurns sessions(
      0, 0, [&](std::vector<surge::v1::Assignment> turns) { loop->Enqueue(std::move(turns)); },
      [&](surge::v1::RequestRecord r) {
        std::lock_guard<std::mutex> lock(mu);
        ++result.records;
        if (r.sent()) {
          const double ms = static_cast<double>(r.sent_ns() - r.planned_ns()) / 1e6;
          (r.turn() == 0 ? result.start_lateness_ms : result.turn_lateness_ms).push_back(ms);
        }
        if (result.records >= expected) loop->Stop();
      });
  loop = std::make_unique<surge::worker::SendLoop>(
      clock, sender, surge::worker::SendLoopOptions{}, [&](surge::v1::RequestRecord r) {
        {
          std::lock_guard<std::mutex> lock(mu);
          result.peak_open = std::max(result.peak_open, sessions.open());
        }
        sessions.OnRecord(std::move(r));
      });
  loop->SetStart(surge::ToNanos(clock.Now()) + 100000000);
  loop->Enqueue(sessions.Admit(Starts(f)));
  loop->Run();
  return result;
}

void WorkerOnSimulatedTime(const Flags& f) {
  SimEventClock clock;
  const auto start = std::chrono::steady_clock::now();
  const TurnResult r = RunWorker(f, clock, clock);
  Print("simulated time", f, r,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void WorkerOnRealTime(const Flags& f) {
  surge::Clock& clock = surge::RealClock();
  AnswerThread answers(clock);
  const auto start = std::chrono::steady_clock::now();
  const TurnResult r = RunWorker(f, clock, answers);
  Print("real clock", f, r,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, f)) {
    std::fprintf(stderr,
                 "usage: sessions_bench [--sessions=N] [--turns=T] [--worker_sessions=N] "
                 "[--think_ms=MS] [--answer_ms=MS>0] [--start_s=S] [--seed=N] "
                 "[--mode=all|coordinator|sim|real]\n");
    return 2;
  }
  if (f.mode == "all" || f.mode == "coordinator") CoordinatorMemory(f);
  if (f.mode == "all" || f.mode == "sim") WorkerOnSimulatedTime(f);
  if (f.mode == "all" || f.mode == "real") WorkerOnRealTime(f);
  return 0;
}
