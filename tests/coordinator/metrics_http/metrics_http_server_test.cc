// The live metrics' HTTP endpoint on loopback: GET
// /metrics answers the rendered text, other paths 404, other methods 405,
// bounded requests, and a port in use is a clear error.
#include "coordinator/metrics_http/metrics_http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/status/status.h"

namespace surge::coordinator {
namespace {

// Sends `request` to 127.0.0.1:`port` and reads until the server closes.
std::string Exchange(uint16_t port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  (void)send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  close(fd);
  return answer;
}

TEST(MetricsHttpServerTest, ServesMetricsAnd404ElseWhere) {
  std::atomic<int> renders{0};
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [&renders] {
    return "surge_requests_sent_total " + std::to_string(++renders) + "\n";
  });
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->port();
  ASSERT_GT(port, 0);

  const std::string ok =
      Exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_NE(ok.find("\r\n\r\nsurge_requests_sent_total 1\n"), std::string::npos) << ok;
  // Rendered anew for every scrape; a query string is allowed.
  const std::string again =
      Exchange(port, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(again.find("\r\n\r\nsurge_requests_sent_total 2\n"), std::string::npos) << again;

  const std::string missing =
      Exchange(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << missing;
  const std::string post = Exchange(
      port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << post;
  EXPECT_EQ(renders.load(), 2);

  // Headers beyond the 8 KiB bound: refused, never rendered.
  const std::string huge = Exchange(
      port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(10000, 'a') + "\r\n\r\n");
  EXPECT_EQ(huge.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << huge.substr(0, 80);
  EXPECT_EQ(renders.load(), 2);

  // Keep-alive: two requests on one connection, both answered.
  const std::string two = Exchange(port,
                                   "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                                   "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(two.find("surge_requests_sent_total 3\n"), std::string::npos) << two;
  EXPECT_NE(two.find("surge_requests_sent_total 4\n"), std::string::npos) << two;

  (*server)->Stop();
  EXPECT_EQ(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n"), "connect failed");
}

TEST(MetricsHttpServerTest, APortInUseIsAnErrorNamingTheAddress) {
  auto first = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string(); });
  ASSERT_TRUE(first.ok()) << first.status();
  const uint16_t port = (*first)->port();
  auto second = MetricsHttpServer::Start("127.0.0.1", port, [] { return std::string(); });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("cannot listen on 127.0.0.1:" + std::to_string(port) +
                                           ": Address already in use"),
            std::string::npos)
      << second.status();
}

}  // namespace
}  // namespace surge::coordinator
