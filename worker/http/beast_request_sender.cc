#include "worker/http/beast_request_sender.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/api_key.h"
#include "client/tls_client.h"
#include "client/url.h"
#include "common/cpu_budget.h"
#include "common/failure_kind.h"
#include "common/log.h"
#include "common/utf8.h"
#include "worker/http/http_connection.h"
#include "worker/http/openai_request.h"
#include "worker/http/request_exchange.h"
#include "worker/http/request_format.h"
#include "worker/http/request_state.h"
#include "worker/http/response_metrics.h"

namespace surge::worker {

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;
using surge::v1::RequestRecord;

// After the drain deadline, how long Shutdown waits for aborted requests to
// unwind before it reports them itself.
constexpr std::chrono::seconds kAbortGrace{5};
// The error of a request cut off by Shutdown before its first byte.
constexpr char kNotSentInterruptedError[] = "not_sent: stopped_before_first_byte";

// An injected resolver's addresses as endpoints at `port`.
Resolve AddressesFrom(BeastRequestSender::AddressResolver resolver, std::string host,
                      uint16_t port) {
  return [resolver = std::move(resolver), host = std::move(host),
          port]() -> absl::StatusOr<std::vector<tcp::endpoint>> {
    absl::StatusOr<std::vector<std::string>> texts = resolver(host);
    if (!texts.ok()) return texts.status();
    std::vector<tcp::endpoint> out;
    for (const std::string& text : *texts) {
      error_code ec;
      const net::ip::address address = net::ip::make_address(text, ec);
      if (ec) return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", text));
      out.emplace_back(address, port);
    }
    if (out.empty()) return absl::UnavailableError(absl::StrCat("cannot resolve ", host));
    return out;
  };
}

}  // namespace

class BeastRequestSender::Impl {
 public:
  Impl(Clock& clock, RequestFormat format, std::shared_ptr<net::ssl::context> tls_context,
       std::vector<tcp::endpoint> endpoints, Resolve resolve, AddressPolicy policy, int io_threads,
       std::optional<WarmPoolOptions> warm_pool)
      : clock_(clock),
        format_(std::move(format)),
        ignore_eos_(AsksIgnoreEos(format_.extra())),
        tls_context_(std::move(tls_context)),
        connector_(clock, std::move(endpoints), std::move(resolve), format_.url.host,
                   format_.verify_peer, policy),
        exchange_(clock, format_, connector_, tls_context_.get()),
        ioc_(io_threads),
        work_(net::make_work_guard(ioc_)) {
    if (warm_pool.has_value()) warm_pool_.emplace(*warm_pool);
    for (int i = 0; i < io_threads; ++i) {
      threads_.emplace_back([this] { RunIo(); });
    }
  }

  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  void Prepare(const surge::v1::Assignment& assignment) {
    auto prep = std::make_shared<Preparation>();
    int refills = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutting_down_) return;
      auto [it, inserted] = prepared_.try_emplace(KeyOf(assignment));
      if (!inserted) return;  // prepared already
      prep->conn = TakeConnectionLocked(refills);
      it->second = prep;
    }
    StartRefills(refills);
    // Only the coroutine reads the payload, and it starts after this (post).
    prep->assignment = assignment;
    const Strand strand = prep->conn->strand;
    net::co_spawn(strand, PrepareRun(std::move(prep)), [](std::exception_ptr e) {
      if (e) LogError("beast_request_sender: preparation coroutine ended with an exception");
    });
  }

  void CancelPrepared(const surge::v1::Assignment& assignment) {
    std::shared_ptr<Preparation> prep;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = prepared_.find(KeyOf(assignment));
      if (it == prepared_.end()) return;
      prep = std::move(it->second);
      prepared_.erase(it);
      if (!prep->done) {
        // The coroutine gives the connection back when its connect is over.
        prep->abandoned = true;
        return;
      }
    }
    if (!prep->failed) ReturnToPool(std::move(prep->conn), /*answered=*/false);
  }

  void Send(const surge::v1::Assignment& assignment, SendCallback on_done) {
    auto st = std::make_shared<RequestState>();
    st->index = assignment.index();
    st->attempt = assignment.attempt();
    st->input_tokens = assignment.input_tokens();
    st->max_tokens = assignment.max_tokens();
    st->prompt_seed = assignment.prompt_seed();
    st->keep_text = assignment.in_session();
    st->on_done = std::move(on_done);
    // A prepared, connected plain connection: this thread writes first.
    std::shared_ptr<Connection> direct;
    // The preparation is still running and will start the request.
    bool attached = false;
    int refills = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!shutting_down_) {
        std::shared_ptr<Connection> conn;
        auto it = prepared_.find(KeyOf(assignment));
        if (it != prepared_.end()) {
          std::shared_ptr<Preparation> prep = std::move(it->second);
          prepared_.erase(it);
          if (prep->done) {
            st->built = true;
            st->request_bytes = std::move(prep->request_bytes);
            st->estimated_input = prep->estimated_input;
            st->session_prompt = std::move(prep->session_prompt);
            conn = prep->failed
                       ? std::make_shared<Connection>(prep->conn->strand, tls_context_.get())
                       : prep->conn;
            if (!conn->tls.has_value() && conn->connected) direct = conn;
          } else {
            prep->waiting = st;
            conn = prep->conn;
            attached = true;
          }
        } else {
          conn = TakeConnectionLocked(refills);
        }
        st->strand = conn->strand;
        if (direct == nullptr) st->conn = std::move(conn);
        st->id = next_id_++;
        active_.emplace(st->id, st);
        ++inflight_;
      }
    }
    StartRefills(refills);
    if (!st->strand.has_value()) {
      RequestRecord record = BaseRecord(*st);
      SetFailure(record, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT, "sender_shut_down");
      if (st->on_done) st->on_done(std::move(record));
      return;
    }
    if (attached) {
      // The preparation runs the request when its connect is over (and may
      // already be doing so: `st` is not ours any more). The timeout counts
      // from now, as for any request.
      net::post(*st->strand, [this, st] { exchange_.StartWatchdog(st); });
      return;
    }
    if (direct != nullptr) {
      WriteFirstBytes(*st, std::move(direct));
    } else if (!st->built) {
      st->assignment = assignment;
    }
    // co_spawn posts: the rest of the request runs on the I/O thread.
    net::co_spawn(*st->strand, Run(st), [](std::exception_ptr e) {
      if (e) LogError("beast_request_sender: request coroutine ended with an exception");
    });
  }

  size_t inflight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return inflight_;
  }

  uint64_t connections_opened() const { return connector_.opened(); }
  bool RunReadyWork() {
    try {
      return ioc_.poll_one() > 0;
    } catch (const std::exception& e) {
      LogError(absl::StrCat("beast_request_sender: completion run by the pacer: ", e.what()));
      return true;
    }
  }
  // Opens the warm pool's StartConnections for the start, less what is open
  // already (a second call opens only the difference).
  void WarmConnections(double rate_rps, size_t prepared_at_once) {
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!warm_pool_.has_value() || shutting_down_) return;
      const size_t open = idle_.size() + inflight_ + prepared_.size() +
                          static_cast<size_t>(warm_pool_->refilling());
      const size_t want = warm_pool_->StartConnections(rate_rps, prepared_at_once);
      n = want > open ? static_cast<int>(want - open) : 0;
      if (n > 0) warm_pool_->OnStartConnectsStarted(n);
    }
    StartRefills(n);
  }

  WarmPoolCounts warm_pool_counts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return warm_pool_.has_value() ? warm_pool_->counts() : WarmPoolCounts{};
  }
  uint64_t sent_total() const { return exchange_.sent_total(); }
  SenderStats stats() const {
    const WarmPoolCounts pool = warm_pool_counts();
    return SenderStats{.connections_opened = connector_.opened(),
                       .takes = pool.takes,
                       .cold_takes = pool.cold_takes,
                       .refills_ok = pool.refills_ok,
                       .at_start = pool.at_start,
                       .io_cpu_ns = io_cpu_ns_.load()};
  }
  int64_t connect_ns_total() const { return connector_.connect_ns_total(); }

  void Shutdown(std::chrono::milliseconds drain) {
    std::lock_guard<std::mutex> shutdown_lock(shutdown_mu_);
    if (shut_down_) return;
    std::vector<std::shared_ptr<RequestState>> leftovers;
    std::vector<std::shared_ptr<Preparation>> unsent;
    {
      std::unique_lock<std::mutex> lock(mu_);
      shutting_down_ = true;
      refills_abandoned_ = true;
      // Prepared and never sent: nothing will claim them any more. A
      // preparation still connecting is told so and its socket closed.
      for (auto& [key, prep] : prepared_) {
        if (!prep->done) {
          prep->abandoned = true;
          net::post(prep->conn->strand, [conn = prep->conn] { conn->Close(); });
        }
        unsent.push_back(std::move(prep));
      }
      prepared_.clear();
      cv_.wait_for(lock, drain, [this] { return inflight_ == 0; });
      // Past the drain deadline: close the sockets of what is still running;
      // each coroutine then sees `aborted` and reports INTERRUPTED with what
      // it knows so far (NOT_SENT when nothing had been written).
      for (auto& [id, st] : active_) {
        st->aborted = true;
        net::post(*st->strand, [st = st] {
          if (st->finished.load()) return;
          if (st->conn != nullptr) st->conn->Close();
          if (st->watchdog.has_value()) st->watchdog->cancel();
        });
      }
      cv_.wait_for(lock, kAbortGrace, [this] { return inflight_ == 0; });
      for (auto& [id, st] : active_) leftovers.push_back(st);
    }
    // Should not happen (closed sockets complete at once), but every Send
    // must get exactly one callback even if a coroutine is stuck.
    for (auto& st : leftovers) {
      RequestRecord record = BaseRecord(*st);
      SetFailure(record, surge::v1::INTERRUPTED, surge::v1::FAILURE_KIND_INTERRUPTED,
                 "interrupted: no_record");
      record.set_interrupted_ns(ToNanos(clock_.Now()));
      Finish(st, std::move(record));
    }
    work_.reset();
    ioc_.stop();
    for (auto& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();  // Shutdown from a callback: cannot join ourselves
      } else if (t.joinable()) {
        t.join();
      }
    }
    unsent.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.clear();
    }
    shut_down_ = true;
  }

 private:
  void RunIo() {
    NameThisThread("surge-io");
    for (;;) {
      try {
        ioc_.run();
        break;
      } catch (const std::exception& e) {
        LogError(absl::StrCat("beast_request_sender: I/O thread: ", e.what()));
      }
    }
    io_cpu_ns_.fetch_add(ThisThreadCpuNs());
  }

  // A connection for a preparation or a request: the most recent idle one,
  // else a new one that the taker opens itself (a cold take). Told to the
  // warm pool, which may ask for `refills` more connects (started after the
  // lock by StartRefills).
  std::shared_ptr<Connection> TakeConnectionLocked(int& refills) {
    std::shared_ptr<Connection> conn = TakeIdleLocked();
    const bool cold = conn == nullptr;
    if (cold) conn = std::make_shared<Connection>(net::make_strand(ioc_), tls_context_.get());
    if (warm_pool_.has_value()) {
      const int64_t now_ns = ToNanos(clock_.Now());
      conn->taken_ns = now_ns;
      warm_pool_->OnTake(now_ns, cold);
      refills = RefillsDueLocked(now_ns);
    }
    return conn;
  }

  // The warm pool's refills due now; counted as started.
  int RefillsDueLocked(int64_t now_ns) {
    if (!warm_pool_.has_value() || shutting_down_) return 0;
    const size_t open = idle_.size() + inflight_ + prepared_.size();
    const int due = warm_pool_->RefillsDue(now_ns, idle_.size(), open);
    if (due > 0) warm_pool_->OnRefillsStarted(due);
    return due;
  }

  // Opens `n` connections for the pool on the I/O thread: one post from
  // the caller (the pacer, for a take), the connects spawned there.
  void StartRefills(int n) {
    if (n <= 0) return;
    net::post(ioc_, [this, n] {
      for (int i = 0; i < n; ++i) {
        auto conn = std::make_shared<Connection>(net::make_strand(ioc_), tls_context_.get());
        const Strand strand = conn->strand;
        net::co_spawn(strand, Refill(std::move(conn)), [](std::exception_ptr e) {
          if (e) LogError("beast_request_sender: refill coroutine ended with an exception");
        });
      }
    });
  }

  // One refill: connect (and handshake), then idle in the pool. A refill
  // that fails pauses the refills (WarmPool::OnRefillDone); the requests
  // meet the error themselves.
  net::awaitable<void> Refill(std::shared_ptr<Connection> conn) {
    OpenError error;
    const bool ok =
        co_await connector_.Open(*conn, OpenCancel{.abandoned = &refills_abandoned_}, error);
    {
      std::lock_guard<std::mutex> lock(mu_);
      warm_pool_->OnRefillDone(ok, ToNanos(clock_.Now()));
    }
    if (ok) {
      ReturnToPool(std::move(conn), /*answered=*/false);
    } else {
      conn->Close();
    }
  }

  std::shared_ptr<Connection> TakeIdleLocked() {
    while (!idle_.empty()) {
      // Most recently used first: least likely to have hit the server's
      // keep-alive timeout.
      std::shared_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (!IdleConnectionIsStale(*conn)) return conn;
    }
    return nullptr;
  }

  // `answered`: the connection has carried a request and its answer (a
  // server may then close it between requests: the keep-alive race).
  // With a warm pool, the hold since the take is told to it, and the
  // refills it asks for then start here (on the I/O thread).
  void ReturnToPool(std::shared_ptr<Connection> conn, bool answered = true) {
    if (answered) conn->reused = true;
    int refills = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutting_down_) return;
      if (warm_pool_.has_value()) {
        const int64_t now_ns = ToNanos(clock_.Now());
        if (conn->taken_ns != 0) warm_pool_->OnReturn(now_ns - conn->taken_ns);
        conn->taken_ns = 0;
        idle_.push_back(std::move(conn));
        refills = RefillsDueLocked(now_ns);
      } else {
        idle_.push_back(std::move(conn));
      }
    }
    StartRefills(refills);
  }

  RequestRecord BaseRecord(const RequestState& st) const {
    RequestRecord record;
    record.set_index(st.index);
    record.set_attempt(st.attempt);
    record.set_worker(-1);
    record.set_max_tokens(RequestedMaxTokens(st.max_tokens, format_.extra()));
    return record;
  }

  // Runs the callback exactly once and retires the request.
  void Finish(const std::shared_ptr<RequestState>& st, RequestRecord record) {
    if (st->finished.exchange(true)) return;
    // Every error text quotes something from outside (a body, a TLS or
    // system message): it must be valid UTF-8 to travel in a proto string.
    MakeValidUtf8(record.mutable_error());
    // ... and never the API key, which servers quote back when they reject
    // it (R-REQ-1).
    client::RedactApiKey(record.mutable_error(), format_.api_key);
    SendCallback callback = std::move(st->on_done);
    // Retire first, so inflight() already excludes this request inside and
    // after its callback. Shutdown still waits for a running callback: it
    // joins the I/O threads.
    {
      std::lock_guard<std::mutex> lock(mu_);
      active_.erase(st->id);
      --inflight_;
    }
    cv_.notify_all();
    if (callback) {
      try {
        callback(std::move(record));
      } catch (const std::exception& e) {
        LogError(absl::StrCat("beast_request_sender: on_done threw: ", e.what()));
      } catch (...) {
        LogError("beast_request_sender: on_done threw");
      }
    }
  }

  // Writes the first bytes of a prepared request on a prepared plain
  // connection from the caller's (the pacer's) thread: one non-blocking
  // send(2), stamped just before, so that the request does not wait for the
  // I/O thread. The connection is this thread's alone: it left the
  // reservation map under mu_, no operation is pending on it, the request is
  // not spawned yet, and Shutdown only ever closes `st.conn` (still empty).
  // Run takes over what is left to write and the answer.
  void WriteFirstBytes(RequestState& st, std::shared_ptr<Connection> conn) {
    if (IdleConnectionIsStale(*conn)) {
      // Closed by the server while reserved: Execute opens a fresh one and
      // writes there (sent_ns is that write).
      conn->Close();
      st.direct_conn = std::make_shared<Connection>(conn->strand, nullptr);
      return;
    }
    const int fd = conn->socket().native_handle();
    // R-ACT-2: the first byte is handed to the socket right after this.
    const int64_t sent_ns = ToNanos(clock_.Now());
    const ssize_t n =
        ::send(fd, st.request_bytes.data(), st.request_bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      st.direct_written = static_cast<size_t>(n);
      st.direct_sent_ns = sent_ns;
    }
    // n <= 0 (EAGAIN, or an error such as a reset): nothing went out; the
    // I/O thread writes the whole request and meets the error itself.
    st.direct_conn = std::move(conn);
  }

  // Builds a prepared request's bytes and opens its reserved connection (if
  // it is not an idle one already), then leaves them for Send, or hands
  // them to a Send that came first, or gives the connection back.
  net::awaitable<void> PrepareRun(std::shared_ptr<Preparation> prep) {
    {
      BuiltRequest built = BuildAssignmentRequest(format_, prep->assignment);
      prep->estimated_input = built.estimated_input;
      prep->request_bytes = std::move(built.bytes);
      prep->session_prompt = std::move(built.session_prompt);
      prep->assignment = surge::v1::Assignment();
    }
    std::shared_ptr<Connection> conn = prep->conn;
    bool ok = conn->connected;
    if (!ok && !prep->abandoned.load()) {
      // The request timeout bounds the connect, as it would for a request.
      auto over = std::make_shared<bool>(false);  // touched on the strand only
      std::optional<net::steady_timer> timer;
      if (format_.timeout_s > 0) {
        timer.emplace(conn->strand);
        timer->expires_after(
            std::chrono::nanoseconds(static_cast<int64_t>(format_.timeout_s * 1e9)));
        timer->async_wait([conn, over](const error_code& ec) {
          if (ec || *over) return;
          conn->Close();
        });
      }
      OpenError error;
      ok = co_await connector_.Open(*conn, OpenCancel{.abandoned = &prep->abandoned}, error);
      *over = true;
      if (timer.has_value()) timer->cancel();
    }
    if (!ok) conn->Close();
    std::shared_ptr<RequestState> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      prep->done = true;
      prep->failed = !ok;
      waiting = std::move(prep->waiting);
    }
    if (waiting != nullptr) {
      // Send came first and is waiting: run it here, on the same strand.
      waiting->built = true;
      waiting->request_bytes = std::move(prep->request_bytes);
      waiting->estimated_input = prep->estimated_input;
      waiting->session_prompt = std::move(prep->session_prompt);
      if (!ok) waiting->conn = std::make_shared<Connection>(conn->strand, tls_context_.get());
      co_await Run(waiting);
    } else if (prep->abandoned.load() && ok) {
      ReturnToPool(std::move(conn), /*answered=*/false);
    }
    // Otherwise it stays in prepared_ for Send or CancelPrepared (or it was
    // abandoned and failed: the closed connection just goes away).
  }

  net::awaitable<void> Run(std::shared_ptr<RequestState> st) {
    if (st->direct_conn != nullptr) st->conn = std::move(st->direct_conn);
    RequestRecord record = BaseRecord(*st);
    bool reusable = false;
    try {
      reusable = co_await exchange_.Execute(st, record);
    } catch (const std::exception& e) {
      SetFailure(record, surge::v1::FAILED, surge::v1::FAILURE_KIND_INTERNAL,
                 absl::StrCat("internal: ", e.what()));
    }
    if (st->watchdog.has_value()) st->watchdog->cancel();
    if (record.status() == surge::v1::INTERRUPTED) {
      // Cut off by Shutdown: sent → keeps sent_ns, TTFT, ITL and tokens so
      // far; never written → provably not sent.
      if (record.sent_ns() == 0) {
        SetFailure(record, surge::v1::NOT_SENT, surge::v1::FAILURE_KIND_NOT_SENT,
                   kNotSentInterruptedError);
      } else {
        record.set_interrupted_ns(ToNanos(clock_.Now()));
      }
    }
    record.set_http_retries(st->http_retries);
    record.set_retry_reason(st->retry_reason);
    record.set_retry_sent_ns(st->retry_sent_ns);
    record.set_short_output(IsShortOutput(record, ignore_eos_));
    std::shared_ptr<Connection> conn = std::move(st->conn);
    if (reusable && !st->stopped()) {
      // Back to the pool before the callback, so a Send from the callback
      // can reuse it.
      ReturnToPool(std::move(conn));
    } else if (conn != nullptr) {
      conn->Close();
    }
    Finish(st, std::move(record));
  }

  Clock& clock_;
  const RequestFormat format_;
  const bool ignore_eos_;  // the extra body asks for ignore_eos (short-output rule)
  const std::shared_ptr<net::ssl::context> tls_context_;  // null for http
  Connector connector_;
  RequestExchange exchange_;

  // Declared before everything that holds sockets, so it is destroyed last.
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;

  std::mutex shutdown_mu_;  // serialises Shutdown calls
  bool shut_down_ = false;  // guarded by shutdown_mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool shutting_down_ = false;                                          // guarded by mu_
  uint64_t next_id_ = 0;                                                // guarded by mu_
  size_t inflight_ = 0;                                                 // guarded by mu_
  std::vector<std::shared_ptr<Connection>> idle_;                       // guarded by mu_
  std::unordered_map<uint64_t, std::shared_ptr<RequestState>> active_;  // guarded by mu_
  std::map<PrepKey, std::shared_ptr<Preparation>> prepared_;            // guarded by mu_
  std::optional<WarmPool> warm_pool_;                                   // guarded by mu_
  // Set by Shutdown: refills still connecting give up.
  std::atomic<bool> refills_abandoned_{false};
  // CPU of the I/O threads that have ended, ns.
  std::atomic<int64_t> io_cpu_ns_{0};
};

absl::StatusOr<std::unique_ptr<BeastRequestSender>> BeastRequestSender::Create(
    Clock& clock, const surge::v1::TargetConfig& target, int io_threads, AddressResolver resolver,
    std::optional<std::string> api_key, std::optional<WarmPoolOptions> warm_pool) {
  if (io_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_threads: ", io_threads, " is not allowed; use 1 or more"));
  }
  absl::StatusOr<client::ParsedUrl> url = client::ParseBaseUrl(target.base_url());
  if (!url.ok()) return url.status();
  std::shared_ptr<net::ssl::context> tls_context;
  if (url->scheme == "https") {
    absl::StatusOr<std::shared_ptr<net::ssl::context>> context =
        client::MakeClientTlsContext(target);
    if (!context.ok()) return context.status();
    tls_context = *std::move(context);
  }
  absl::StatusOr<RequestFormat> format =
      MakeRequestFormat(target, *std::move(url), std::move(api_key));
  if (!format.ok()) return format.status();

  const std::optional<AddressPolicy> policy = AddressPolicyFromName(target.address_policy());
  if (!policy.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("address_policy: \"", ToValidUtf8(target.address_policy()),
                     "\" is not allowed; use round-robin or first (flag --target-address-policy)"));
  }
  const std::string host = format->url.host;
  const uint16_t port = static_cast<uint16_t>(format->url.port);
  Resolve resolve =
      resolver ? AddressesFrom(std::move(resolver), host, port) : SystemResolver(host, port);
  // Resolve once: DNS stays out of every request's timing.
  absl::StatusOr<std::vector<tcp::endpoint>> endpoints = resolve();
  if (!endpoints.ok()) {
    return absl::UnavailableError(
        absl::StrCat(endpoints.status().message(), " (base_url ", target.base_url(), ")"));
  }
  LogInfo(AddressesLine(host, port, *endpoints, *policy));
  auto impl = std::make_unique<Impl>(clock, *std::move(format), std::move(tls_context),
                                     *std::move(endpoints), std::move(resolve), *policy, io_threads,
                                     warm_pool);
  return std::unique_ptr<BeastRequestSender>(new BeastRequestSender(std::move(impl)));
}

BeastRequestSender::BeastRequestSender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BeastRequestSender::~BeastRequestSender() { Shutdown(std::chrono::milliseconds(0)); }

void BeastRequestSender::Send(const surge::v1::Assignment& assignment, SendCallback on_done) {
  impl_->Send(assignment, std::move(on_done));
}

void BeastRequestSender::WarmConnections(double rate_rps, size_t prepared_at_once) {
  impl_->WarmConnections(rate_rps, prepared_at_once);
}

void BeastRequestSender::Prepare(const surge::v1::Assignment& assignment) {
  impl_->Prepare(assignment);
}

void BeastRequestSender::CancelPrepared(const surge::v1::Assignment& assignment) {
  impl_->CancelPrepared(assignment);
}

size_t BeastRequestSender::inflight() const { return impl_->inflight(); }

void BeastRequestSender::Shutdown(std::chrono::milliseconds drain) { impl_->Shutdown(drain); }

uint64_t BeastRequestSender::connections_opened() const { return impl_->connections_opened(); }

WarmPoolCounts BeastRequestSender::warm_pool_counts() const { return impl_->warm_pool_counts(); }

bool BeastRequestSender::RunReadyWork() { return impl_->RunReadyWork(); }

SenderStats BeastRequestSender::stats() const { return impl_->stats(); }

uint64_t BeastRequestSender::sent_total() const { return impl_->sent_total(); }

ConnectTotals BeastRequestSender::connect_totals() const {
  return ConnectTotals{impl_->connections_opened(), impl_->connect_ns_total()};
}

}  // namespace surge::worker
