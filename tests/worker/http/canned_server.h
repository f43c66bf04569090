// A scripted HTTP server on 127.0.0.1:0 for the HTTP client tests: it
// records each raw request and writes whatever bytes the test scripts, so
// tests can send malformed, truncated or erroneous answers. Plain POSIX
// sockets; one connection at a time, on its own thread.
#ifndef SURGE_TESTS_WORKER_HTTP_CANNED_SERVER_H_
#define SURGE_TESTS_WORKER_HTTP_CANNED_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace surge::testing {

class CannedServer {
 public:
  // One piece of a timed answer: wait `delay_ms`, then write `bytes`.
  struct Piece {
    int delay_ms;
    std::string bytes;
  };

  // `respond` maps the raw request (headers and body) to the bytes written
  // back; "" closes the connection without an answer. With `close_after`
  // the connection is closed after each answer.
  explicit CannedServer(std::function<std::string(const std::string&)> respond,
                        bool close_after = true)
      : CannedServer(
            [respond = std::move(respond)](const std::string& request) {
              return std::vector<Piece>{{0, respond(request)}};
            },
            close_after) {}

  // The same with an answer written in timed pieces (e.g. one SSE event at
  // 100 ms, then a close); no pieces, or one empty piece, closes at once.
  CannedServer(std::function<std::vector<Piece>(const std::string&)> respond, bool close_after)
      : respond_(std::move(respond)), close_after_(close_after) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
      std::abort();
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }

  ~CannedServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }

  uint16_t port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // Waits until `fd` is readable or stop_; false on stop.
  bool WaitReadable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  // Reads one request (headers + Content-Length body); "" on close.
  std::string ReadRequest(int fd, std::string& pending) {
    for (;;) {
      const size_t header_end = pending.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        size_t content_length = 0;
        const std::string headers = pending.substr(0, header_end);
        const size_t cl = headers.find("Content-Length: ");
        if (cl != std::string::npos) content_length = std::stoul(headers.substr(cl + 16));
        const size_t total = header_end + 4 + content_length;
        if (pending.size() >= total) {
          std::string request = pending.substr(0, total);
          pending.erase(0, total);
          return request;
        }
      }
      if (!WaitReadable(fd)) return "";
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return "";
      pending.append(buf, static_cast<size_t>(n));
    }
  }

  void Loop() {
    while (WaitReadable(listen_fd_)) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::string pending;
      for (;;) {
        const std::string request = ReadRequest(fd, pending);
        if (request.empty()) break;
        {
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(request);
        }
        const std::vector<Piece> answer = respond_(request);
        if (answer.empty() || (answer.size() == 1 && answer[0].bytes.empty())) {
          break;  // close without answering
        }
        for (const Piece& piece : answer) {
          if (piece.delay_ms > 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(piece.delay_ms));
          }
          size_t off = 0;
          while (off < piece.bytes.size()) {
            const ssize_t n =
                ::send(fd, piece.bytes.data() + off, piece.bytes.size() - off, MSG_NOSIGNAL);
            if (n <= 0) break;
            off += static_cast<size_t>(n);
          }
        }
        if (close_after_) break;
      }
      ::close(fd);
    }
  }

  std::function<std::vector<Piece>(const std::string&)> respond_;
  const bool close_after_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// An HTTP/1.1 answer with a Content-Length body.
inline std::string HttpAnswer(int status, const std::string& reason, const std::string& body,
                              const std::string& content_type = "application/json") {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The header of a chunked SSE answer, and one chunk.
inline std::string SseHeader() {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
         "Transfer-Encoding: chunked\r\n\r\n";
}
inline std::string Chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}
inline std::string LastChunk() { return "0\r\n\r\n"; }

// SSE events of a chat stream: a role-only delta, one content token, and a
// finish_reason "stop".
inline const std::string kRole = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
inline const std::string kToken = "data: {\"choices\":[{\"delta\":{\"content\":\"t\"}}]}\n\n";
inline const std::string kFinish =
    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
// The header of an SSE answer with neither a length nor chunking: the body
// ends when the server closes the connection (CannedServer closes after the
// answer).
inline const std::string kCloseDelimitedSse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

// One chat chunk of choice `index` with `delta` (JSON) and `finish` (JSON:
// null or a string), as an SSE chunk of a chunked body.
inline std::string ChoiceEvent(int index, const std::string& delta,
                               const std::string& finish = "null") {
  return Chunk("data: {\"choices\":[{\"index\":" + std::to_string(index) + ",\"delta\":" + delta +
               ",\"finish_reason\":" + finish + "}]}\n\n");
}
// A usage-only chunk: 8 prompt tokens, `completion_tokens` output tokens.
inline std::string UsageEvent(int completion_tokens) {
  return Chunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":" +
               std::to_string(completion_tokens) + "}}\n\n");
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_WORKER_HTTP_CANNED_SERVER_H_
