// The Content-Encoding of an answer's body, undone as the body arrives
// (zlib's inflate for gzip and deflate). Pure: compressed bytes in, decoded
// bytes out; no I/O, no clock.
#ifndef SURGE_WORKER_HTTP_BODY_DECODER_H_
#define SURGE_WORKER_HTTP_BODY_DECODER_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace surge::worker {

// Decodes one body in the coding its Content-Encoding header names.
// Supported: none or "identity" (bytes pass through), "gzip" and "x-gzip"
// (a gzip stream, or several one after the other), "deflate" (a zlib
// stream, as RFC 9110 says, or a raw deflate stream, which some servers
// send instead). Names are case-insensitive; "identity" entries of a list
// are ignored. Any other coding, or more than one, is unsupported.
// Decoding is incremental: Decode() returns every byte the input so far
// determines, so an SSE event compressed with a flush is decoded when its
// last compressed byte arrives. Not thread-safe: one decoder per answer.
class BodyDecoder {
 public:
  // `content_encoding`: the header's value ("" when there is none).
  explicit BodyDecoder(std::string_view content_encoding);
  ~BodyDecoder();
  BodyDecoder(const BodyDecoder&) = delete;
  BodyDecoder& operator=(const BodyDecoder&) = delete;

  // True when the body is not encoded: Decode() is not needed.
  bool identity() const { return coding_ == Coding::kIdentity; }
  // False for a coding surge does not decode (e.g. "br", "zstd").
  bool supported() const { return coding_ != Coding::kUnsupported; }
  // The coding as the header named it, trimmed and lower case ("gzip",
  // "br", "gzip, br"); "" when identity.
  const std::string& name() const { return name_; }

  // Appends to `out` what the next piece `bytes` of the body decodes to.
  // Errors: INVALID_ARGUMENT "<name> body does not decode: <zlib's
  // message>" for corrupt data (later calls return the same error);
  // FAILED_PRECONDITION for an unsupported coding.
  absl::Status Decode(std::string_view bytes, std::string& out);

 private:
  enum class Coding { kIdentity, kGzip, kDeflate, kUnsupported };
  struct Inflater;

  absl::Status Start(bool raw);
  absl::Status Inflate(std::string_view bytes, std::string& out);
  absl::Status Fail(const char* message);

  Coding coding_ = Coding::kIdentity;
  std::string name_;
  std::unique_ptr<Inflater> inflater_;  // set once the first bytes came
  std::string head_;                    // deflate: bytes held until its wrapper is known
  absl::Status error_;                  // the first decode error, kept
};

}  // namespace surge::worker

#endif  // SURGE_WORKER_HTTP_BODY_DECODER_H_
