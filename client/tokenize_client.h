// `--tokenizer server`: counts prompt tokens with the target's own tokenize
// endpoint, before the run, over one kept-alive connection (TLS and the API
// key as for the run's requests).
#ifndef SURGE_CLIENT_TOKENIZE_CLIENT_H_
#define SURGE_CLIENT_TOKENIZE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "client/tokenize_shapes.h"
#include "surge/v1/config.pb.h"

namespace surge::client {

class TokenizeClient {
 public:
  // Finds the shape that answers at {base_url without a trailing /v1}/tokenize:
  // POSTs a short text in the vLLM/SGLang shape (messages when `chat`), then
  // TGI's, then llama.cpp's, and keeps the first that answers HTTP 200 with
  // its shape's body. `chat` counts through the chat template only with the
  // vLLM/SGLang shape (counts_template()); the others count the text alone.
  // `timeout` bounds each exchange, in real time.
  // Errors:
  //  - INVALID_ARGUMENT for a bad target (base_url, headers, CA or key
  //    file), and "tokenizer: --tokenizer server: no tokenize endpoint at
  //    <url>: tried <shape> (<its answer>), ...": none of the shapes answered
  //    (nothing else was sent);
  //  - UNAVAILABLE "cannot reach <url>: <why>": no connection.
  static absl::StatusOr<std::unique_ptr<TokenizeClient>> Connect(
      const surge::v1::TargetConfig& target, bool chat, std::chrono::milliseconds timeout);
  ~TokenizeClient();
  TokenizeClient(const TokenizeClient&) = delete;
  TokenizeClient& operator=(const TokenizeClient&) = delete;

  // The server's token count of a request whose prompt is `text` (with
  // counts_template(), of the chat request with that one user message).
  // Reconnects once when the server closed the kept-alive connection.
  // Errors: UNAVAILABLE "tokenize at <url>: <why>" (I/O, timeout, an HTTP
  // status other than 200), INVALID_ARGUMENT for an answer not of shape().
  // Not thread-safe: one caller at a time.
  absl::StatusOr<uint32_t> Count(std::string_view text);

  TokenizeShape shape() const;
  // True when counts include the chat template (chat and vLLM/SGLang).
  bool counts_template() const;
  // The tokenize URL, for the log.
  const std::string& url() const;
  // Tokenize requests sent so far, the probes included.
  uint64_t calls() const;

  struct Impl;

 private:
  explicit TokenizeClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace surge::client

#endif  // SURGE_CLIENT_TOKENIZE_CLIENT_H_
