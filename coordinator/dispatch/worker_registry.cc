#include "coordinator/dispatch/worker_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace surge::coordinator {

WorkerRegistry::Worker* WorkerRegistry::Find(const std::string& peer) {
  for (auto& w : workers_) {
    if (w.peer == peer) return &w;
  }
  return nullptr;
}

WorkerRegistry::Worker* WorkerRegistry::ByIndex(int32_t index) {
  for (auto& w : workers_) {
    if (w.index == index) return &w;
  }
  return nullptr;
}

WorkerRegistry::Worker* WorkerRegistry::Join(const std::string& peer, uint64_t incarnation,
                                             int32_t requested_index, Clock::TimePoint now,
                                             bool* fresh) {
  *fresh = false;
  Worker* w = Find(peer);
  if (w == nullptr) {
    if (started_ || static_cast<int>(workers_.size()) >= options_.num_workers) return nullptr;
    std::vector<bool> taken(options_.num_workers, false);
    for (const auto& other : workers_) taken[other.index] = true;
    int32_t index = requested_index;
    if (index < 0 || index >= options_.num_workers || taken[index]) {
      index = static_cast<int32_t>(std::find(taken.begin(), taken.end(), false) - taken.begin());
    }
    Worker joined;
    joined.peer = peer;
    joined.index = index;
    joined.incarnation = incarnation;
    workers_.push_back(joined);
    std::sort(workers_.begin(), workers_.end(),
              [](const Worker& a, const Worker& b) { return a.index < b.index; });
    w = Find(peer);
    *fresh = true;
  }
  w->last_heard = now;
  return w;
}

surge::v1::HeartbeatAck WorkerRegistry::OnHeartbeat(Worker& w, const surge::v1::Heartbeat& hb,
                                                    Clock::TimePoint received) {
  w.ready = true;
  if (hb.has_target_check()) {
    w.target_error = hb.target_check().reachable()
                         ? ""
                         : (hb.target_check().error().empty() ? std::string("cannot connect")
                                                              : hb.target_check().error());
  }
  w.inflight = hb.inflight();
  w.sent_total = std::max(w.sent_total, hb.sent_total());
  if (hb.has_send_health()) {
    w.window_sends = hb.send_health().sends();
    w.window_ns = hb.send_health().window_ns();
  }
  const bool idle = hb.inflight() == 0 && hb.queued() == 0;
  if (idle && !w.idle) w.idle_since = received;
  w.idle = idle;
  surge::v1::HeartbeatAck ack;
  ack.set_hb_seq(hb.hb_seq());
  ack.set_t1_worker_ns(hb.t1_worker_ns());
  ack.set_t2_coord_ns(ToNanos(received));
  return ack;
}

void WorkerRegistry::Start(Clock::TimePoint now) {
  started_ = true;
  last_sweep_ = now;
  for (auto& w : workers_) w.last_heard = now;
}

bool WorkerRegistry::BeginSweep(Clock::TimePoint now) {
  if (now - last_sweep_ < options_.sweep_period) return false;
  if (now - last_sweep_ > options_.stall_guard) {
    const auto lag = now - last_sweep_;
    for (auto& w : workers_) w.last_heard += lag;
  }
  last_sweep_ = now;
  return true;
}

std::vector<WorkerRegistry::Death> WorkerRegistry::FindDead(Clock::TimePoint now,
                                                            const ExitProbe& exited) const {
  std::vector<Death> dead;
  for (const auto& w : workers_) {
    if (!w.alive) continue;
    if (exited && exited(w.index)) {
      dead.push_back({w.index, "process exited"});
    } else if (now - w.last_heard > options_.dead_after) {
      dead.push_back({w.index, absl::StrCat("silent for ", options_.dead_after.count(), " ms")});
    }
  }
  return dead;
}

std::vector<int32_t> WorkerRegistry::IdleFor(Clock::TimePoint now) const {
  std::vector<int32_t> idle;
  for (const auto& w : workers_) {
    if (w.alive && w.idle && now - w.idle_since >= options_.idle_grace) idle.push_back(w.index);
  }
  return idle;
}

std::vector<WorkerRegistry::Death> WorkerRegistry::FindGoneBeforeStart(Clock::TimePoint now) const {
  std::vector<Death> gone;
  for (const auto& w : workers_) {
    const std::chrono::milliseconds limit = w.ready ? options_.dead_after : options_.setup_silence;
    if (w.alive && now - w.last_heard > limit) {
      gone.push_back({w.index, absl::StrCat("silent for ", limit.count(), " ms")});
    }
  }
  return gone;
}

std::vector<int32_t> WorkerRegistry::QuietFor(Clock::TimePoint now,
                                              std::chrono::milliseconds quiet) const {
  std::vector<int32_t> quiet_ones;
  for (const auto& w : workers_) {
    if (w.alive && now - w.last_heard >= quiet) quiet_ones.push_back(w.index);
  }
  return quiet_ones;
}

void WorkerRegistry::Leave(int32_t index) {
  const auto it = std::find_if(workers_.begin(), workers_.end(),
                               [index](const Worker& w) { return w.index == index; });
  if (it == workers_.end()) return;
  left_.push_back({it->peer, it->index, Describe(*it), false});
  workers_.erase(it);
}

WorkerRegistry::Left* WorkerRegistry::FindLeft(const std::string& peer) {
  for (auto& l : left_) {
    if (l.peer == peer) return &l;
  }
  return nullptr;
}

std::string WorkerRegistry::Describe(const Worker& w) {
  std::vector<std::string> parts;
  if (!w.address.empty()) parts.push_back(w.address);
  if (!w.host.empty()) parts.push_back(absl::StrCat("host ", w.host));
  if (w.pid != 0) parts.push_back(absl::StrCat("pid ", w.pid));
  if (parts.empty()) parts.push_back(absl::StrCat("peer ", w.peer));
  return absl::StrJoin(parts, ", ");
}

uint64_t WorkerRegistry::fenced_count() const {
  return static_cast<uint64_t>(std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) {
    return w.fenced_told && !(w.said_goodbye && w.goodbye_reason != "fenced");
  }));
}

int WorkerRegistry::ready_count() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.ready; }));
}

bool WorkerRegistry::any_alive() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.alive; });
}

uint64_t WorkerRegistry::inflight() const {
  uint64_t n = 0;
  for (const auto& w : workers_) n += w.alive ? w.inflight : 0;
  return n;
}

}  // namespace surge::coordinator
