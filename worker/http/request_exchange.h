// One request's exchange on its connection (internal to worker/http:
// includes Asio and Beast): open the connection, write the request, read
// the answer into the record through a ResponseReader.
#ifndef SURGE_WORKER_HTTP_REQUEST_EXCHANGE_H_
#define SURGE_WORKER_HTTP_REQUEST_EXCHANGE_H_

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "surge/v1/record.pb.h"
#include "worker/http/http_connection.h"
#include "worker/http/request_format.h"
#include "worker/http/request_state.h"
#include "worker/http/response_reader.h"

namespace surge::worker {

// The error of a request cut off by Shutdown after its first byte went out.
inline constexpr char kInterruptedError[] = "interrupted: cut_off_at_stop";

// Runs requests on their connections, each on its connection's strand.
// Timestamps come from the clock: sent_ns just before the first write
// (after the connect), each answer read as it ends.
class RequestExchange {
 public:
  // All of them must outlive the exchange; `tls_context` is null for http.
  RequestExchange(Clock& clock, const RequestFormat& format, Connector& connector,
                  boost::asio::ssl::context* tls_context);

  // Builds the request's bytes unless prepared, arms its timeout, opens its
  // connection unless connected, writes the request and reads the answer
  // into `record`. A reused connection that the server turns out to have
  // closed before any byte of the answer (the keep-alive race) is replaced
  // by a fresh one and the request written once more. Returns whether the
  // connection may go back to the pool.
  boost::asio::awaitable<bool> Execute(std::shared_ptr<RequestState> st,
                                       surge::v1::RequestRecord& record);

  // Arms the request timeout (format.timeout_s, counted from now) unless
  // there is none, it is armed already or the request is over: when it
  // fires, the request is marked timed out and its socket closed.
  void StartWatchdog(const std::shared_ptr<RequestState>& st);

  // Requests whose first write was stamped (record sent_ns set); a
  // keep-alive retry does not count again.
  uint64_t sent_total() const { return sent_total_.load(); }

 private:
  // How one attempt of a request on one connection ended.
  enum class Outcome {
    kDone,      // record filled; close the connection
    kReusable,  // record filled; the connection may go back to the pool
    kRetry,     // keep-alive race: send again on a fresh connection
  };
  using Parser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;

  boost::asio::awaitable<bool> Open(std::shared_ptr<RequestState> st, Connection& conn,
                                    surge::v1::RequestRecord& record);
  // One attempt: writes the request on `stream` (conn's plain socket or its
  // TLS stream) and reads the answer.
  template <class Stream>
  boost::asio::awaitable<Outcome> Attempt(std::shared_ptr<RequestState> st, Connection& conn,
                                          Stream& stream, bool can_retry,
                                          surge::v1::RequestRecord& record);
  // Stamps and counts the attempt's first write; returns what Send wrote
  // of the request already.
  size_t StampWrite(RequestState& st);
  template <class Stream>
  boost::asio::awaitable<bool> ReadBody(std::shared_ptr<RequestState> st, Connection& conn,
                                        Stream& stream, Parser& parser,
                                        surge::v1::RequestRecord& record);

  Clock& clock_;
  const RequestFormat& format_;
  Connector& connector_;
  boost::asio::ssl::context* const tls_context_;
  std::atomic<uint64_t> sent_total_{0};
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_REQUEST_EXCHANGE_H_
