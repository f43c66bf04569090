#include "simserver/sim_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "common/key_file.h"
#include "common/log.h"
#include "common/rate_limited_log.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"
#include "simserver/answer_model.h"
#include "simserver/batch_engine.h"
#include "simserver/batch_model.h"
#include "simserver/prefix_cache.h"
#include "simserver/server_metrics.h"
#include "simserver/tokenize_endpoint.h"

namespace surge::simserver {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Json = nlohmann::json;

// Largest request body accepted (long prompts are a few hundred KiB).
constexpr uint64_t kMaxBodyBytes = 64ull << 20;
// The pause between the pieces of a split answer.
constexpr std::chrono::microseconds kSplitPause{100};

// The bytes of a whole JSON answer (status line, headers, body).
std::string JsonAnswerBytes(unsigned version, bool keep_alive, http::status status,
                            std::string body) {
  http::response<http::string_body> response(status, version);
  response.set(http::field::server, "surge-sim");
  response.set(http::field::content_type, "application/json");
  response.keep_alive(keep_alive);
  response.body() = std::move(body);
  response.prepare_payload();
  std::ostringstream out;
  out << response;
  return out.str();
}

int64_t UnixSeconds(Clock& clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(clock.WallNow().time_since_epoch())
      .count();
}

// FNV-1a 64 of the request body, 16 hex digits: equal bodies, equal
// fingerprints (exact-replay tests compare two runs' traffic with it).
std::string BodyFingerprint(std::string_view body) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", h);
}

// How one answer's tokens are timed: without the queueing model token k is
// due at start + ttft + k·itl; with it, when the engine generated it.
struct Pacing {
  // When the request was read.
  Clock::TimePoint arrival;
  // Without the model: arrival + the prefill of its uncached tokens.
  Clock::TimePoint start;
  // With the model: the request in the engine; null without.
  std::shared_ptr<EngineTicket> ticket;
};

}  // namespace

class SimServer::Impl {
 public:
  Impl(const surge::v1::SimServerConfig& config, SimTokenizer tokenizer)
      : options_(config),
        tokenizer_(std::move(tokenizer)),
        ttft_(MsToNanos(config.ttft_ms())),
        itl_(MsToNanos(config.itl_ms())),
        stall_(MsToNanos(config.fault_stall_ms())),
        faults_(config),
        cache_(config.cache_blocks() > 0
                   ? std::make_unique<PrefixCache>(config.cache_blocks(), config.block_tokens())
                   : nullptr),
        ioc_(static_cast<int>(config.threads())),
        acceptor_(ioc_),
        engine_(config.max_num_seqs() > 0
                    ? std::make_shared<BatchEngine>(ioc_, RealClock(), BatchModelOptionsOf(config),
                                                    metrics_)
                    : nullptr) {}

  // Loads the certificate and key when options ask for https.
  absl::Status SetUpTls() {
    if (options_.tls_cert_file().empty()) return absl::OkStatus();
    auto context = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    error_code ec;
    context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                             net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                             net::ssl::context::no_tlsv1_1,
                         ec);
    context->use_certificate_chain_file(options_.tls_cert_file(), ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("tls_cert_file: cannot load ",
                                                     options_.tls_cert_file(), ": ", ec.message(),
                                                     " (expected a PEM certificate chain)"));
    }
    context->use_private_key_file(options_.tls_key_file(), net::ssl::context::pem, ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("tls_key_file: cannot load ",
                                                     options_.tls_key_file(), ": ", ec.message(),
                                                     " (expected the certificate's PEM key)"));
    }
    tls_context_ = std::move(context);
    return absl::OkStatus();
  }

  ~Impl() { Stop(); }

  // Reads options_.api_key_file() when one is set.
  absl::Status LoadApiKey() {
    if (options_.api_key_file().empty()) return absl::OkStatus();
    absl::StatusOr<std::string> key = ReadKeyFile(options_.api_key_file(), "api_key_file");
    if (!key.ok()) return key.status();
    authorization_ = absl::StrCat("Bearer ", *key);
    return absl::OkStatus();
  }

  // With an API key, whether `req` carries it (the /v1/ paths only).
  bool Authorized(const http::request<http::string_body>& req, const std::string& path) const {
    if (authorization_.empty() || !absl::StartsWith(path, "/v1/")) return true;
    const auto it = req.find(http::field::authorization);
    return it != req.end() &&
           std::string_view(it->value().data(), it->value().size()) == authorization_;
  }

  // Opens options_.request_log_file() (truncated) when one is set.
  absl::Status OpenRequestLog() {
    if (options_.request_log_file().empty()) return absl::OkStatus();
    request_log_.open(options_.request_log_file(), std::ios::out | std::ios::trunc);
    if (!request_log_) {
      return absl::InvalidArgumentError(
          absl::StrCat("request_log_file: cannot write ", options_.request_log_file(),
                       " (expected a file path in a writable folder)"));
    }
    return absl::OkStatus();
  }

  absl::Status Bind() {
    error_code ec;
    const net::ip::address address = net::ip::make_address(options_.address(), ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("address: \"", options_.address(),
                                                     "\" is not an IP address (e.g. 127.0.0.1)"));
    }
    const tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.port()));
    const std::string where = absl::StrCat(options_.address(), ":", options_.port());
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("cannot bind ", where, ": ", ec.message()));
    port_ = acceptor_.local_endpoint(ec).port();
    return absl::OkStatus();
  }

  uint16_t port() const { return port_; }
  uint64_t requests_served() const { return requests_served_.load(); }

  void Start() {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (started_ || stopped_) return;
    started_ = true;
    net::co_spawn(ioc_, Accept(), [](std::exception_ptr e) {
      if (e) LogError("sim server: accept loop ended with an exception");
    });
    for (uint32_t i = 0; i < options_.threads(); ++i) {
      threads_.emplace_back([this] {
        for (;;) {
          try {
            ioc_.run();
            return;
          } catch (const std::exception& e) {
            LogError(absl::StrCat("sim server: I/O thread: ", e.what()));
          }
        }
      });
    }
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (stopped_) return;
    stopped_ = true;
    ioc_.stop();
    for (auto& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();
      } else if (t.joinable()) {
        t.join();
      }
    }
    // No I/O thread runs now, so the sockets can be closed from here; the
    // suspended coroutines that own them are destroyed with ioc_.
    error_code ignored;
    acceptor_.close(ignored);
    std::lock_guard<std::mutex> conns_lock(conns_mu_);
    for (tcp::socket* socket : conns_) {
      socket->shutdown(tcp::socket::shutdown_both, ignored);
      socket->close(ignored);
    }
  }

 private:
  // Registers a connection's socket for Stop() while the session lives.
  class ConnectionGuard {
   public:
    ConnectionGuard(Impl& impl, tcp::socket* socket) : impl_(impl), socket_(socket) {
      std::lock_guard<std::mutex> lock(impl_.conns_mu_);
      impl_.conns_.insert(socket_);
    }
    ~ConnectionGuard() {
      std::lock_guard<std::mutex> lock(impl_.conns_mu_);
      impl_.conns_.erase(socket_);
    }
    ConnectionGuard(const ConnectionGuard&) = delete;
    ConnectionGuard& operator=(const ConnectionGuard&) = delete;

   private:
    Impl& impl_;
    tcp::socket* socket_;
  };

  net::awaitable<void> Accept() {
    net::steady_timer backoff(ioc_);
    for (;;) {
      error_code ec;
      // One strand per connection: with several I/O threads, a session's
      // handlers never run concurrently.
      net::any_io_executor strand = net::make_strand(ioc_);
      tcp::socket socket =
          co_await acceptor_.async_accept(strand, net::redirect_error(net::use_awaitable, ec));
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
      if (ec) {
        // E.g. out of file descriptors: back off briefly instead of spinning,
        // and say so once per 10 s with a count, not once per failure.
        accept_warnings_.Write(LogLevel::kWarning, "accept",
                               absl::StrCat("sim server: accept: ", ec.message()));
        backoff.expires_after(std::chrono::milliseconds(10));
        co_await backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
        continue;
      }
      net::co_spawn(strand, Session(std::move(socket)), [](std::exception_ptr e) {
        if (e) LogError("sim server: session ended with an exception");
      });
    }
  }

  net::awaitable<void> Session(tcp::socket socket) {
    error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    if (tls_context_ == nullptr) {
      ConnectionGuard guard(*this, &socket);
      co_await Serve(socket, socket);
      co_return;
    }
    beast::ssl_stream<tcp::socket> stream(std::move(socket), *tls_context_);
    ConnectionGuard guard(*this, &stream.next_layer());
    co_await stream.async_handshake(net::ssl::stream_base::server,
                                    net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      // E.g. the client rejected our certificate, or spoke plain HTTP.
      LogDebug(absl::StrCat("sim server: TLS handshake: ", ec.message()));
      stream.next_layer().close(ec);
      co_return;
    }
    co_await Serve(stream, stream.next_layer());
  }

  // Reads and answers requests on `stream` (the socket itself, or the TLS
  // stream over it) until the client or an answer closes the connection.
  template <class Stream>
  net::awaitable<void> Serve(Stream& stream, tcp::socket& socket) {
    error_code ec;
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kMaxBodyBytes);
      co_await http::async_read_header(stream, buffer, parser,
                                       net::redirect_error(net::use_awaitable, ec));
      if (!ec && parser.get()[http::field::expect] == "100-continue") {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await net::async_write(stream, net::buffer(kContinue, sizeof(kContinue) - 1),
                                  net::redirect_error(net::use_awaitable, ec));
      }
      if (!ec) {
        co_await http::async_read(stream, buffer, parser,
                                  net::redirect_error(net::use_awaitable, ec));
      }
      if (ec) {
        if (&ec.category() == &http::make_error_code(http::error::end_of_stream).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message) {
          // Malformed HTTP: say so, then close (the stream is out of sync).
          const unsigned code = ec == http::error::body_limit ? 413 : 400;
          co_await WriteJson(stream, 11, /*keep_alive=*/false, static_cast<http::status>(code),
                             ErrorBody(absl::StrCat("bad HTTP request: ", ec.message()),
                                       "invalid_request_error", code));
        }
        break;
      }
      // Deadlines of this request count from when it was read completely.
      const Clock::TimePoint start = RealClock().Now();
      http::request<http::string_body> request = parser.release();
      if (request_log_.is_open()) LogRequest(request, socket);
      const bool keep = co_await Handle(stream, socket, request, start);
      if (!keep) break;
    }
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
  }

  // One line of the request log (SimServerConfig.request_log_file).
  void LogRequest(const http::request<http::string_body>& request, tcp::socket& socket) {
    error_code ec;
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    const auto tag = request.find("X-Surge-Request");
    Json line = {
        {"t_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()},
        {"peer", ec ? std::string() : peer.address().to_string()},
        {"method", std::string(request.method_string())},
        {"path", std::string(request.target())},
        {"surge_request", tag == request.end() ? Json(nullptr) : Json(std::string(tag->value()))},
        {"body_bytes", request.body().size()},
        {"body_fnv1a64", BodyFingerprint(request.body())}};
    if (options_.request_log_bodies()) line["body"] = ToValidUtf8(request.body());
    std::lock_guard<std::mutex> lock(request_log_mu_);
    request_log_ << line.dump() << "\n";
    request_log_.flush();
  }

  // Answers one request; returns whether the connection stays open.
  template <class Stream>
  net::awaitable<bool> Handle(Stream& stream, tcp::socket& socket,
                              const http::request<http::string_body>& req, Clock::TimePoint start) {
    const unsigned version = req.version();
    const bool keep_alive = req.keep_alive();
    std::string path(req.target().data(), req.target().size());
    if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);
    while (path.size() > 1 && path.back() == '/') path.pop_back();

    const bool models = path == "/v1/models";
    const bool chat = path == "/v1/chat/completions";
    const bool completions = path == "/v1/completions";
    const bool tokenize = path == "/tokenize";
    const bool metrics = path == "/metrics";
    const bool health = path == "/health";
    if (!models && !chat && !completions && !tokenize && !metrics && !health) {
      co_return co_await WriteJson(
          stream, version, keep_alive, http::status::not_found,
          ErrorBody(absl::StrCat("no route for ", path), "not_found_error", 404));
    }
    if (!Authorized(req, path)) {
      co_return co_await WriteJson(
          stream, version, keep_alive, http::status::unauthorized,
          ErrorBody("Unauthorized: this server needs an API key (Authorization: Bearer KEY)",
                    "authentication_error", 401));
    }
    const http::verb expected = models || metrics || health ? http::verb::get : http::verb::post;
    if (req.method() != expected) {
      co_return co_await WriteJson(
          stream, version, keep_alive, http::status::method_not_allowed,
          ErrorBody(absl::StrCat(path, " takes ", std::string(http::to_string(expected))),
                    "invalid_request_error", 405));
    }
    if (models) {
      Json body = {
          {"object", "list"},
          {"data", Json::array({Json{
                       {"id", options_.model()}, {"object", "model"}, {"owned_by", "surge"}}})}};
      co_return co_await WriteJson(stream, version, keep_alive, http::status::ok, body.dump());
    }
    if (health) {
      // vLLM's readiness answer: 200, empty body, no key needed.
      co_return co_await WriteBody(stream, version, keep_alive, http::status::ok, "text/plain",
                                   std::string());
    }
    if (metrics) {
      std::string text = PrometheusText(options_.model(), MetricsSnapshot());
      co_return co_await WriteBody(stream, version, keep_alive, http::status::ok,
                                   kPrometheusContentType, std::move(text));
    }
    if (tokenize) {
      // Body and status first: a conditional temporary inside a co_await
      // expression is destroyed twice by g++ 12.
      absl::StatusOr<std::string> answer = TokenizeAnswer(req.body(), options_.model(), tokenizer_);
      http::status status = http::status::ok;
      std::string body;
      if (answer.ok()) {
        body = *std::move(answer);
      } else {
        status = http::status::bad_request;
        body = ErrorBody(std::string(answer.status().message()), "invalid_request_error", 400);
      }
      co_return co_await WriteJson(stream, version, keep_alive, status, std::move(body));
    }
    absl::StatusOr<CompletionRequest> parsed =
        ParseCompletionRequest(chat, req.body(), options_.model(), tokenizer_);
    if (!parsed.ok()) {
      co_return co_await WriteJson(
          stream, version, keep_alive, http::status::bad_request,
          ErrorBody(std::string(parsed.status().message()), "invalid_request_error", 400));
    }
    const uint64_t serial = serial_.fetch_add(1);
    const AnswerWriter writer(*parsed, serial, UnixSeconds(RealClock()));
    const Fault fault = faults_.Draw(serial);
    switch (fault) {
      case Fault::k429:
        co_return co_await WriteJson(
            stream, version, keep_alive, http::status::too_many_requests,
            ErrorBody("simulated rate limit (fault injection)", "rate_limit_error", 429));
      case Fault::k500:
        co_return co_await WriteJson(
            stream, version, keep_alive, http::status::internal_server_error,
            ErrorBody("simulated internal error (fault injection)", "internal_server_error", 500));
      case Fault::k503:
        co_return co_await WriteJson(
            stream, version, keep_alive, http::status::service_unavailable,
            ErrorBody("simulated overload (fault injection)", "service_unavailable", 503));
      default:
        break;
    }
    const Pacing pacing = StartAnswer(stream.get_executor(), serial, *parsed, start);
    const AnswerGuard guard(*this, pacing);
    // Pieces of a split answer: sizes from the seed and the request number.
    PieceSizes pieces = faults_.SplitPieces(serial);
    PieceSizes* split = fault == Fault::kSplit ? &pieces : nullptr;
    if (!parsed->stream) {
      co_return co_await WholeAnswer(stream, socket, version, keep_alive, *parsed, writer, pacing,
                                     fault, split);
    }
    co_return co_await StreamAnswer(stream, socket, version, keep_alive, *parsed, writer, pacing,
                                    fault, split);
  }

  // The prefix cache's visit (cached_tokens set when the cache is on);
  // returns the prompt tokens it did not hold, the ones to prefill.
  uint32_t VisitCache(CompletionRequest& req) {
    uint32_t uncached = req.prompt_tokens;
    if (cache_ != nullptr) {
      req.cached_tokens = std::min(cache_->Visit(req.prompt_token_ids), req.prompt_tokens);
      uncached -= *req.cached_tokens;
    }
    return uncached;
  }

  // How the answer to a request read at `arrival` is timed. Without the
  // model the prefix cache's hits shorten the prefill: the answer is due
  // that much later than ttft_ms alone would make it. With it the request
  // joins the engine's waiting queue.
  Pacing StartAnswer(net::any_io_executor session, uint64_t serial, CompletionRequest& req,
                     Clock::TimePoint arrival) {
    const uint32_t uncached = VisitCache(req);
    Pacing pacing{.arrival = arrival, .start = arrival, .ticket = nullptr};
    if (engine_ != nullptr) {
      pacing.ticket =
          engine_->Submit(std::move(session), serial, req.prompt_tokens, uncached, req.max_tokens);
    } else {
      pacing.start += MsToNanos(options_.prefill_ms_per_token() * uncached);
    }
    return pacing;
  }

  // While a completion answer goes: counted as running (without the
  // model); at its end, however it ends, its request leaves the engine.
  class AnswerGuard {
   public:
    AnswerGuard(Impl& impl, const Pacing& pacing)
        : impl_(impl), pacing_(pacing), engine_(impl.engine_) {
      impl_.answering_.fetch_add(1);
    }
    ~AnswerGuard() {
      impl_.answering_.fetch_sub(1);
      if (pacing_.ticket != nullptr) engine_->Abort(*pacing_.ticket);
    }
    AnswerGuard(const AnswerGuard&) = delete;
    AnswerGuard& operator=(const AnswerGuard&) = delete;

   private:
    Impl& impl_;
    const Pacing& pacing_;
    // Held: ioc_ may destroy this answer after Impl let go of the engine.
    const std::shared_ptr<BatchEngine> engine_;
  };

  // When token k of the answer is due (see Pacing).
  net::awaitable<Clock::TimePoint> TokenDue(const Pacing& pacing, int64_t k) {
    if (pacing.ticket == nullptr) co_return pacing.start + ttft_ + k* itl_;
    const Clock::TimePoint generated = co_await engine_->TokenTime(*pacing.ticket, k);
    co_return generated;
  }

  // Without the model, the metrics count tokens as they fall due here
  // (`count` tokens from token `first`); the engine counts its own.
  void CountDue(const Pacing& pacing, const CompletionRequest& req, int64_t first, int64_t count) {
    if (pacing.ticket != nullptr) return;
    if (first == 0) {
      metrics_.FirstToken(
          req.prompt_tokens,
          std::chrono::duration<double>(pacing.start + ttft_ - pacing.arrival).count());
    }
    metrics_.Generated(static_cast<uint64_t>(count));
  }

  // The gauges and counters of GET /metrics. kv_cache_usage: the prefix
  // cache's blocks held / cache_blocks when it is on; else, with the model,
  // running sequences / max_num_seqs; else 0.
  ServerMetricsSnapshot MetricsSnapshot() {
    // The engine first: the steps due by now end, so the counters read
    // after it include their tokens.
    std::pair<uint64_t, uint64_t> running_waiting = {answering_.load(), 0};
    if (engine_ != nullptr) running_waiting = engine_->RunningAndWaiting();
    ServerMetricsSnapshot s = metrics_.Snapshot();
    std::tie(s.running, s.waiting) = running_waiting;
    if (cache_ != nullptr) {
      s.kv_cache_usage =
          static_cast<double>(cache_->size()) / static_cast<double>(options_.cache_blocks());
    } else if (engine_ != nullptr) {
      s.kv_cache_usage =
          static_cast<double>(s.running) / static_cast<double>(options_.max_num_seqs());
    }
    return s;
  }

  // The non-streamed answer, due with its last token (a stall adds
  // fault_stall_ms): the fault's body instead of the answer (malformed,
  // error_event), or its way of writing it (reset: cut in half; split: in
  // pieces).
  template <class Stream>
  net::awaitable<bool> WholeAnswer(Stream& stream, tcp::socket& socket, unsigned version,
                                   bool keep_alive, const CompletionRequest& req,
                                   const AnswerWriter& writer, const Pacing& pacing, Fault fault,
                                   PieceSizes* split) {
    const Clock::TimePoint last_due = co_await TokenDue(pacing, req.max_tokens - 1);
    net::steady_timer timer(stream.get_executor());
    timer.expires_at(last_due + (fault == Fault::kStall ? stall_ : std::chrono::nanoseconds(0)));
    error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;
    CountDue(pacing, req, 0, req.max_tokens);
    std::string body;
    if (fault == Fault::kMalformed) {
      body = kMalformedPayload;
    } else if (fault == Fault::kErrorEvent) {
      body = ErrorBody(kEngineFailure, "internal_server_error", 500);
    } else {
      body = writer.Whole();
    }
    if (fault != Fault::kReset && fault != Fault::kSplit) {
      co_return co_await WriteJson(stream, version, keep_alive, http::status::ok, std::move(body));
    }
    const size_t body_size = body.size();
    std::string bytes = JsonAnswerBytes(version, keep_alive, http::status::ok, std::move(body));
    if (fault == Fault::kReset) {
      // The header and half of the body, then the connection goes.
      bytes.resize(bytes.size() - body_size + body_size / 2);
      co_await net::async_write(stream, net::buffer(bytes),
                                net::redirect_error(net::use_awaitable, ec));
      socket.shutdown(tcp::socket::shutdown_both, ec);
      socket.close(ec);
      co_return false;
    }
    const bool written = co_await WritePieces(stream, bytes, *split);
    if (!written) co_return false;
    requests_served_.fetch_add(1);
    co_return keep_alive;
  }

  // What a stream does after a mid-stream fault.
  enum class AfterFault { kGoOn, kFinish, kClosed };

  // Injects the mid-stream `fault`; a stall adds to `shift`.
  template <class Stream>
  net::awaitable<AfterFault> InjectMidStream(Stream& stream, tcp::socket& socket, Fault fault,
                                             std::chrono::nanoseconds& shift) {
    error_code ec;
    switch (fault) {
      case Fault::kReset:
        socket.shutdown(tcp::socket::shutdown_both, ec);
        socket.close(ec);
        co_return AfterFault::kClosed;
      case Fault::kMalformed: {
        std::string payload(kMalformedPayload);
        const bool written = co_await WriteEvent(stream, std::move(payload), nullptr);
        co_return written ? AfterFault::kGoOn : AfterFault::kClosed;
      }
      case Fault::kStall: {
        net::steady_timer timer(stream.get_executor());
        timer.expires_after(stall_);
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
        shift += stall_;
        co_return ec ? AfterFault::kClosed : AfterFault::kGoOn;
      }
      case Fault::kErrorEvent: {
        std::string payload = ErrorBody(kEngineFailure, "internal_server_error", 500);
        const bool written = co_await WriteEvent(stream, std::move(payload), nullptr);
        co_return written ? AfterFault::kFinish : AfterFault::kClosed;
      }
      default:
        co_return AfterFault::kGoOn;
    }
  }

  template <class Stream>
  net::awaitable<bool> StreamAnswer(Stream& stream, tcp::socket& socket, unsigned version,
                                    bool keep_alive, const CompletionRequest& req,
                                    const AnswerWriter& writer, const Pacing& pacing, Fault fault,
                                    PieceSizes* split) {
    error_code ec;
    http::response<http::empty_body> response(http::status::ok, version);
    response.set(http::field::server, "surge-sim");
    response.set(http::field::content_type, "text/event-stream");
    response.set(http::field::cache_control, "no-cache");
    response.keep_alive(keep_alive);
    response.chunked(true);
    http::response_serializer<http::empty_body> serializer(response);
    co_await http::async_write_header(stream, serializer,
                                      net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;
    if (req.chat) {
      // vLLM opens a chat stream with a role-only delta.
      // (Named, not a temporary inside co_await: g++ 12 miscompiles that.)
      Json role_delta = Json::object();
      role_delta["role"] = std::string("assistant");
      std::string role_event = writer.Chunk(role_delta, false);
      const bool written = co_await WriteEvent(stream, std::move(role_event), split);
      if (!written) co_return false;
    }
    // A mid-stream fault comes after this many tokens; -1: none.
    const int64_t fault_at =
        IsMidStream(fault) ? std::min<int64_t>(options_.fault_after_tokens(), req.max_tokens) : -1;
    std::chrono::nanoseconds shift(0);
    bool finish_early = false;
    // Each kind of token event is built once.
    const TokenEvents token_events(writer, req.max_tokens);
    net::steady_timer timer(stream.get_executor());
    for (int64_t k = 0; k <= req.max_tokens; ++k) {
      if (k == fault_at) {
        const AfterFault after = co_await InjectMidStream(stream, socket, fault, shift);
        if (after == AfterFault::kClosed) co_return false;
        if (after == AfterFault::kFinish) {
          finish_early = true;
          break;
        }
      }
      if (k == req.max_tokens) break;
      // Absolute deadlines (without the model start + ttft + k·itl): write
      // delays do not add up; a stall shifts the later tokens.
      const Clock::TimePoint due = co_await TokenDue(pacing, k);
      timer.expires_at(due + shift);
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return false;
      CountDue(pacing, req, k, 1);
      std::string event = token_events.Event(k);
      const bool written = co_await WriteEvent(stream, std::move(event), split);
      if (!written) co_return false;
    }
    if (req.include_usage && !finish_early) {
      std::string usage = writer.UsageChunk();
      const bool written = co_await WriteEvent(stream, std::move(usage), split);
      if (!written) co_return false;
    }
    std::string done("[DONE]");
    const bool done_written = co_await WriteEvent(stream, std::move(done), split);
    if (!done_written) co_return false;
    if (split != nullptr) {
      const std::string last("0\r\n\r\n");
      const bool written = co_await WritePieces(stream, last, *split);
      if (!written) co_return false;
    } else {
      auto last = http::make_chunk_last();
      co_await net::async_write(stream, last, net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return false;
    }
    requests_served_.fetch_add(1);
    co_return keep_alive;
  }

  // Writes "data: <payload>\n\n" as one HTTP chunk; with `split`, in pieces.
  template <class Stream>
  net::awaitable<bool> WriteEvent(Stream& stream, std::string payload, PieceSizes* split) {
    const std::string event = absl::StrCat("data: ", payload, "\n\n");
    error_code ec;
    if (split != nullptr) {
      const std::string chunk = absl::StrCat(absl::Hex(event.size()), "\r\n", event, "\r\n");
      const bool written = co_await WritePieces(stream, chunk, *split);
      co_return written;
    }
    auto chunk = http::make_chunk(net::buffer(event));
    co_await net::async_write(stream, chunk, net::redirect_error(net::use_awaitable, ec));
    co_return !ec;
  }

  // Writes `bytes` in pieces of PieceSizes with a short pause after each:
  // the client's reads end at odd places (fault "split").
  template <class Stream>
  net::awaitable<bool> WritePieces(Stream& stream, const std::string& bytes, PieceSizes& sizes) {
    net::steady_timer pause(stream.get_executor());
    error_code ec;
    size_t offset = 0;
    while (offset < bytes.size()) {
      const size_t n = std::min(sizes.Next(), bytes.size() - offset);
      co_await net::async_write(stream, net::buffer(bytes.data() + offset, n),
                                net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return false;
      offset += n;
      if (offset < bytes.size()) {
        pause.expires_after(kSplitPause);
        co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
        if (ec) co_return false;
      }
    }
    co_return true;
  }

  template <class Stream>
  net::awaitable<bool> WriteJson(Stream& stream, unsigned version, bool keep_alive,
                                 http::status status, std::string body) {
    const bool keep = co_await WriteBody(stream, version, keep_alive, status, "application/json",
                                         std::move(body));
    co_return keep;
  }

  template <class Stream>
  net::awaitable<bool> WriteBody(Stream& stream, unsigned version, bool keep_alive,
                                 http::status status, const char* content_type, std::string body) {
    http::response<http::string_body> response(status, version);
    response.set(http::field::server, "surge-sim");
    response.set(http::field::content_type, content_type);
    response.keep_alive(keep_alive);
    response.body() = std::move(body);
    response.prepare_payload();
    error_code ec;
    co_await http::async_write(stream, response, net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;
    requests_served_.fetch_add(1);
    co_return keep_alive;
  }

  const surge::v1::SimServerConfig options_;
  const SimTokenizer tokenizer_;
  const std::chrono::nanoseconds ttft_;
  const std::chrono::nanoseconds itl_;
  const std::chrono::nanoseconds stall_;
  const FaultPlan faults_;
  const std::unique_ptr<PrefixCache> cache_;        // null: no cache (cache_blocks 0)
  std::unique_ptr<net::ssl::context> tls_context_;  // null: plain http
  uint16_t port_ = 0;
  std::atomic<uint64_t> requests_served_{0};
  std::atomic<uint64_t> serial_{0};
  std::mutex request_log_mu_;
  std::ofstream request_log_;  // guarded by request_log_mu_ once serving
  // "Bearer <key>" when an API key is asked for, else empty.
  std::string authorization_;

  // Outlive ioc_: suspended sessions deregister when ioc_ destroys them.
  std::mutex conns_mu_;
  std::unordered_set<tcp::socket*> conns_;  // guarded by conns_mu_

  RateLimitedLog accept_warnings_{RealClock(), std::chrono::seconds(10)};
  ServerMetrics metrics_;
  // Completion answers under way (the running gauge without the model).
  std::atomic<uint64_t> answering_{0};
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  // The queueing model (max_num_seqs > 0), else null. After ioc_: its timer
  // goes before the io_context does, unless a suspended answer still holds
  // it; then it goes while ioc_ destroys that answer.
  const std::shared_ptr<BatchEngine> engine_;
  std::mutex state_mu_;
  bool started_ = false;  // guarded by state_mu_
  bool stopped_ = false;  // guarded by state_mu_
  std::vector<std::thread> threads_;
};

absl::StatusOr<std::unique_ptr<SimServer>> SimServer::Create(
    const surge::v1::SimServerConfig& config) {
  if (absl::Status s = CheckSimServerConfig(config); !s.ok()) return s;
  SimTokenizer tokenizer;
  if (!config.tokenizer_model().empty()) {
    absl::StatusOr<std::unique_ptr<SentencePieceModel>> model =
        SentencePieceModel::Load(config.tokenizer_model(), "tokenizer_model");
    if (!model.ok()) return model.status();
    tokenizer = SimTokenizer(std::shared_ptr<const SentencePieceModel>(*std::move(model)));
  }
  auto impl = std::make_unique<Impl>(config, std::move(tokenizer));
  if (absl::Status tls = impl->SetUpTls(); !tls.ok()) return tls;
  if (absl::Status log = impl->OpenRequestLog(); !log.ok()) return log;
  if (absl::Status key = impl->LoadApiKey(); !key.ok()) return key;
  absl::Status bound = impl->Bind();
  if (!bound.ok()) return bound;
  return std::unique_ptr<SimServer>(new SimServer(std::move(impl)));
}

SimServer::SimServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimServer::~SimServer() { Stop(); }
uint16_t SimServer::port() const { return impl_->port(); }
void SimServer::Start() { impl_->Start(); }
void SimServer::Stop() { impl_->Stop(); }
uint64_t SimServer::requests_served() const { return impl_->requests_served(); }

}  // namespace surge::simserver
