// Benchmark (not a test): send lateness (first byte handed to the socket −
// planned time) of the real pacer and HTTP client, in one process, against
// the built-in simulated server on 127.0.0.1. Results go to
// docs/PERFORMANCE.md ("Send lateness").
//
// Usage: pacing_bench [--requests=3000] [--rps=200] [--burstiness=0.5]
//   [--input_tokens=64] [--max_tokens=64] [--ttft_ms=20] [--itl_ms=2]
//   [--workers=1] [--prepare_lead_ms=50] [--seed=1] [--max_seconds=120]
//   [--show_worst=0] [--timer_slack_ns=0] [--pacer_cpu=-1] [--pacer_realtime=0]
// timer_slack_ns, pacer_cpu and pacer_realtime set each pacer thread's
// scheduling (worker/pacer_thread.h; 0, -1, 0 = leave it as it is; worker
// w is pinned to pacer_cpu + w).
// burstiness 0 = fixed intervals, else Gamma(burstiness) intervals (surge's
// β); prepare_lead_ms 0 turns Prepare off (every Send builds and connects on
// the I/O thread). Each worker is one BeastRequestSender (1 I/O thread) and
// one SendLoop on RealClock(); requests go round-robin to the workers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/stats.h"
#include "coordinator/config/option_table.h"
#include "simserver/sim_server.h"
#include "surge/v1/config.pb.h"
#include "surge/v1/record.pb.h"
#include "surge/v1/wire.pb.h"
#include "worker/http/beast_request_sender.h"
#include "worker/pacer_thread.h"
#include "worker/send_loop.h"

namespace {

struct Flags {
  uint64_t requests = 3000;
  double rps = 200;
  double burstiness = 0.5;
  uint32_t input_tokens = 64;
  uint32_t max_tokens = 64;
  double ttft_ms = 20;
  double itl_ms = 2;
  int workers = 1;
  double prepare_lead_ms = 50;
  uint64_t seed = 1;
  double max_seconds = 120;
  int show_worst = 0;
  double timer_slack_ns = 0;
  double pacer_cpu = -1;
  double pacer_realtime = 0;
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  std::map<std::string, double*> doubles = {{"rps", &f.rps},
                                            {"burstiness", &f.burstiness},
                                            {"ttft_ms", &f.ttft_ms},
                                            {"itl_ms", &f.itl_ms},
                                            {"max_seconds", &f.max_seconds},
                                            {"prepare_lead_ms", &f.prepare_lead_ms},
                                            {"timer_slack_ns", &f.timer_slack_ns},
                                            {"pacer_cpu", &f.pacer_cpu},
                                            {"pacer_realtime", &f.pacer_realtime}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "bad argument %s (use --name=value)\n", arg.c_str());
      return false;
    }
    const std::string name = arg.substr(2, eq - 2);
    const char* value = arg.c_str() + eq + 1;
    if (auto it = doubles.find(name); it != doubles.end()) {
      *it->second = std::strtod(value, nullptr);
    } else if (name == "requests") {
      f.requests = std::strtoull(value, nullptr, 10);
    } else if (name == "input_tokens") {
      f.input_tokens = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    } else if (name == "max_tokens") {
      f.max_tokens = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    } else if (name == "workers") {
      f.workers = std::max(1, std::atoi(value));
    } else if (name == "show_worst") {
      f.show_worst = std::atoi(value);
    } else if (name == "seed") {
      f.seed = std::strtoull(value, nullptr, 10);
    } else {
      std::fprintf(stderr, "unknown flag --%s\n", name.c_str());
      return false;
    }
  }
  return f.requests > 0 && f.rps > 0;
}

// Planned offsets (ns after t0): fixed 1/rps intervals, or Gamma(β, 1/(rps β)).
std::vector<int64_t> Offsets(const Flags& f) {
  std::vector<int64_t> out;
  out.reserve(f.requests);
  std::mt19937_64 rng(f.seed);
  double t = 0;
  for (uint64_t i = 0; i < f.requests; ++i) {
    if (f.burstiness > 0) {
      std::gamma_distribution<double> gamma(f.burstiness, 1.0 / (f.rps * f.burstiness));
      t += gamma(rng);
    } else {
      t = static_cast<double>(i + 1) / f.rps;
    }
    out.push_back(static_cast<int64_t>(t * 1e9));
  }
  return out;
}

// Forwards to the real sender and times each call on the pacer's thread:
// what Prepare and Send cost the pacer.
class TimedSender final : public surge::worker::RequestSender {
 public:
  TimedSender(surge::Clock& clock, surge::worker::RequestSender& inner)
      : clock_(clock), inner_(inner) {}
  void Send(const surge::v1::Assignment& a, surge::worker::SendCallback on_done) override {
    const auto start = clock_.Now();
    inner_.Send(a, std::move(on_done));
    Add(send_ms_, start);
  }
  void Prepare(const surge::v1::Assignment& a) override {
    const auto start = clock_.Now();
    inner_.Prepare(a);
    Add(prepare_ms_, start);
  }
  void CancelPrepared(const surge::v1::Assignment& a) override { inner_.CancelPrepared(a); }
  size_t inflight() const override { return inner_.inflight(); }
  void Shutdown(std::chrono::milliseconds drain) override { inner_.Shutdown(drain); }
  std::vector<double> send_ms() const {
    std::lock_guard<std::mutex> lock(mu_);
    return send_ms_;
  }
  std::vector<double> prepare_ms() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prepare_ms_;
  }

 private:
  void Add(std::vector<double>& to, surge::Clock::TimePoint start) {
    const double ms = std::chrono::duration<double, std::milli>(clock_.Now() - start).count();
    std::lock_guard<std::mutex> lock(mu_);
    to.push_back(ms);
  }
  surge::Clock& clock_;
  surge::worker::RequestSender& inner_;
  mutable std::mutex mu_;
  std::vector<double> send_ms_;
  std::vector<double> prepare_ms_;
};

void PrintRow(const char* name, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%-26s p50 %7.3f  p90 %7.3f  p99 %7.3f  p99.9 %7.3f  max %7.3f ms\n", name,
              surge::PercentileOfSorted(ms, 50), surge::PercentileOfSorted(ms, 90),
              surge::PercentileOfSorted(ms, 99), surge::PercentileOfSorted(ms, 99.9),
              ms.empty() ? 0.0 : ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  surge::Clock& clock = surge::RealClock();

  auto server_options = surge::coordinator::WithDefaults<surge::v1::SimServerConfig>();
  server_options.set_port(0);
  server_options.set_ttft_ms(flags.ttft_ms);
  server_options.set_itl_ms(flags.itl_ms);
  auto server = surge::simserver::SimServer::Create(server_options);
  if (!server.ok()) {
    std::fprintf(stderr, "sim server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  (*server)->Start();

  surge::v1::TargetConfig target;
  target.set_base_url("http://127.0.0.1:" + std::to_string((*server)->port()));
  target.set_endpoint("/v1/chat/completions");
  target.set_model("surge-sim");
  target.set_stream(true);
  target.set_request_timeout_s(60);

  std::mutex mu;
  std::vector<surge::v1::RequestRecord> records;
  std::atomic<uint64_t> done{0};
  std::vector<std::unique_ptr<surge::worker::BeastRequestSender>> senders;
  std::vector<std::unique_ptr<TimedSender>> timed;
  std::vector<std::unique_ptr<surge::worker::SendLoop>> loops;
  for (int w = 0; w < flags.workers; ++w) {
    auto sender = surge::worker::BeastRequestSender::Create(clock, target, 1);
    if (!sender.ok()) {
      std::fprintf(stderr, "sender: %s\n", sender.status().ToString().c_str());
      return 1;
    }
    senders.push_back(*std::move(sender));
    timed.push_back(std::make_unique<TimedSender>(clock, *senders.back()));
    surge::worker::SendLoopOptions options;
    options.worker_index = w;
    options.prepare_lead =
        std::chrono::microseconds(static_cast<int64_t>(flags.prepare_lead_ms * 1000));
    loops.push_back(std::make_unique<surge::worker::SendLoop>(
        clock, *timed.back(), options, [&](surge::v1::RequestRecord r) {
          std::lock_guard<std::mutex> lock(mu);
          records.push_back(std::move(r));
          done.fetch_add(1);
        }));
  }

  const std::vector<int64_t> offsets = Offsets(flags);
  std::vector<std::vector<surge::v1::Assignment>> batches(flags.workers);
  for (uint64_t i = 0; i < flags.requests; ++i) {
    surge::v1::Assignment a;
    a.set_index(i);
    a.set_attempt(1);
    a.set_offset_ns(offsets[i]);
    a.set_input_tokens(flags.input_tokens);
    a.set_max_tokens(flags.max_tokens);
    a.set_prompt_seed(i * 7919);
    batches[i % flags.workers].push_back(std::move(a));
  }
  // t0 a little ahead, so the first deadlines are not already late.
  const int64_t t0 = surge::ToNanos(clock.Now()) + 200'000'000;
  std::vector<std::thread> pacers;
  for (int w = 0; w < flags.workers; ++w) {
    loops[w]->Enqueue(std::move(batches[w]));
    loops[w]->SetStart(t0);
    surge::worker::PacerThreadOptions pacer;
    pacer.timer_slack_ns = static_cast<uint64_t>(flags.timer_slack_ns);
    pacer.cpu = flags.pacer_cpu < 0 ? -1 : static_cast<int>(flags.pacer_cpu) + w;
    pacer.realtime = flags.pacer_realtime != 0;
    pacers.emplace_back([&loop = *loops[w], pacer] {
      const std::string refused = surge::worker::ConfigurePacerThread(pacer);
      if (!refused.empty()) std::fprintf(stderr, "%s\n", refused.c_str());
      loop.Run();
    });
  }

  // Bounded: the plan's length plus the time the last answers need, at most
  // max_seconds.
  const double plan_s = static_cast<double>(offsets.back()) / 1e9;
  const auto give_up = surge::FromNanos(t0) + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::duration<double>(flags.max_seconds));
  while (done.load() < flags.requests && clock.Now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& loop : loops) loop->Stop();
  for (auto& t : pacers) t.join();
  for (auto& s : senders) s->Shutdown(std::chrono::milliseconds(0));
  (*server)->Stop();

  std::vector<double> lateness_ms, wake_ms, handover_ms;
  uint64_t ok = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& r : records) {
      if (r.status() == surge::v1::OK) ++ok;
      if (!r.sent()) continue;
      lateness_ms.push_back(static_cast<double>(r.sent_ns() - r.planned_ns()) / 1e6);
      wake_ms.push_back(static_cast<double>(r.released_ns() - r.planned_ns()) / 1e6);
      handover_ms.push_back(static_cast<double>(r.sent_ns() - r.released_ns()) / 1e6);
    }
  }
  uint64_t connections = 0;
  for (const auto& s : senders) connections += s->connections_opened();
  std::printf(
      "requests %llu over %.1f s (%.0f RPS, burstiness %.2f), input_tokens %u, max_tokens %u, "
      "ttft %.0f ms, itl %.1f ms, workers %d, prepare_lead %.1f ms\n",
      static_cast<unsigned long long>(flags.requests), plan_s, flags.rps, flags.burstiness,
      flags.input_tokens, flags.max_tokens, flags.ttft_ms, flags.itl_ms, flags.workers,
      flags.prepare_lead_ms);
  std::printf("records %zu, sent %zu, OK %llu, connections opened %llu\n", records.size(),
              lateness_ms.size(), static_cast<unsigned long long>(ok),
              static_cast<unsigned long long>(connections));
  PrintRow("lateness (sent-planned)", lateness_ms);
  PrintRow("pacer wake (rel-planned)", wake_ms);
  PrintRow("hand-over (sent-released)", handover_ms);
  std::vector<double> send_call_ms, prepare_call_ms;
  for (const auto& t : timed) {
    const std::vector<double> s = t->send_ms(), p = t->prepare_ms();
    send_call_ms.insert(send_call_ms.end(), s.begin(), s.end());
    prepare_call_ms.insert(prepare_call_ms.end(), p.begin(), p.end());
  }
  PrintRow("Send call (pacer thread)", send_call_ms);
  if (!prepare_call_ms.empty()) PrintRow("Prepare call (pacer thread)", prepare_call_ms);
  if (flags.show_worst > 0) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<const surge::v1::RequestRecord*> sent;
    for (const auto& r : records) {
      if (r.sent()) sent.push_back(&r);
    }
    std::sort(sent.begin(), sent.end(), [](const auto* a, const auto* b) {
      return a->sent_ns() - a->planned_ns() > b->sent_ns() - b->planned_ns();
    });
    for (size_t i = 0; i < sent.size() && i < static_cast<size_t>(flags.show_worst); ++i) {
      const auto& r = *sent[i];
      std::printf("  late #%zu: index %llu planned %.3f s, wake +%.3f ms, sent +%.3f ms\n", i,
                  static_cast<unsigned long long>(r.index()), r.planned_ns() / 1e9,
                  (r.released_ns() - r.planned_ns()) / 1e6, (r.sent_ns() - r.planned_ns()) / 1e6);
    }
  }
  return records.size() == flags.requests ? 0 : 1;
}
