#include "worker/http/body_decoder.h"

#include <zlib.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace surge::worker {
namespace {

// Bytes inflated per zlib call.
constexpr size_t kOutChunk = 16 * 1024;
// zlib's largest window; +32 also accepts a zlib stream where gzip was
// named, -15 reads raw deflate.
constexpr int kWindowBits = 15;

// The non-identity codings of a Content-Encoding value, lower case.
std::vector<std::string> Codings(std::string_view header) {
  std::vector<std::string> codings;
  for (absl::string_view part :
       absl::StrSplit(absl::string_view(header.data(), header.size()), ',')) {
    std::string coding = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (!coding.empty() && coding != "identity") codings.push_back(std::move(coding));
  }
  return codings;
}

// Whether two bytes start a zlib stream (RFC 1950: method 8, check bits).
bool IsZlibHeader(unsigned char cmf, unsigned char flg) {
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

}  // namespace

struct BodyDecoder::Inflater {
  z_stream stream{};
  ~Inflater() { inflateEnd(&stream); }
};

BodyDecoder::BodyDecoder(std::string_view content_encoding) {
  const std::vector<std::string> codings = Codings(content_encoding);
  if (codings.empty()) return;
  name_ = absl::StrJoin(codings, ", ");
  if (codings.size() > 1) {
    coding_ = Coding::kUnsupported;
  } else if (name_ == "gzip" || name_ == "x-gzip") {
    coding_ = Coding::kGzip;
  } else if (name_ == "deflate") {
    coding_ = Coding::kDeflate;
  } else {
    coding_ = Coding::kUnsupported;
  }
}

BodyDecoder::~BodyDecoder() = default;

absl::Status BodyDecoder::Fail(const char* message) {
  error_ = absl::InvalidArgumentError(absl::StrCat(
      name_, " body does not decode: ", message != nullptr ? message : "corrupt data"));
  return error_;
}

absl::Status BodyDecoder::Start(bool raw) {
  inflater_ = std::make_unique<Inflater>();
  const int bits = raw ? -kWindowBits : kWindowBits + 32;
  if (inflateInit2(&inflater_->stream, bits) != Z_OK) {
    const char* message = inflater_->stream.msg;
    return Fail(message != nullptr ? message : "zlib could not start");
  }
  return absl::OkStatus();
}

absl::Status BodyDecoder::Decode(std::string_view bytes, std::string& out) {
  if (!error_.ok()) return error_;
  switch (coding_) {
    case Coding::kIdentity:
      out.append(bytes);
      return absl::OkStatus();
    case Coding::kUnsupported:
      return absl::FailedPreconditionError(absl::StrCat(name_, " is not decoded"));
    case Coding::kGzip:
      if (inflater_ == nullptr) {
        if (absl::Status s = Start(/*raw=*/false); !s.ok()) return s;
      }
      return Inflate(bytes, out);
    case Coding::kDeflate:
      break;
  }
  if (inflater_ == nullptr) {
    // Which deflate: the first two bytes tell a zlib stream from a raw one.
    head_.append(bytes);
    if (head_.size() < 2) return absl::OkStatus();
    const bool zlib =
        IsZlibHeader(static_cast<unsigned char>(head_[0]), static_cast<unsigned char>(head_[1]));
    if (absl::Status s = Start(/*raw=*/!zlib); !s.ok()) return s;
    const std::string head = std::move(head_);
    head_.clear();
    return Inflate(head, out);
  }
  return Inflate(bytes, out);
}

absl::Status BodyDecoder::Inflate(std::string_view bytes, std::string& out) {
  z_stream& z = inflater_->stream;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  unsigned char buf[kOutChunk];
  for (;;) {
    z.next_out = buf;
    z.avail_out = sizeof(buf);
    const int rc = inflate(&z, Z_NO_FLUSH);
    out.append(reinterpret_cast<const char*>(buf), sizeof(buf) - z.avail_out);
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (concatenated streams).
      if (z.avail_in == 0) return absl::OkStatus();
      if (inflateReset(&z) != Z_OK) return Fail(z.msg);
      continue;
    }
    if (rc == Z_BUF_ERROR || (rc == Z_OK && z.avail_in == 0 && z.avail_out > 0)) {
      // All input consumed and nothing more to give: wait for more bytes.
      if (z.avail_in == 0) return absl::OkStatus();
      if (z.avail_out > 0) return Fail(z.msg);
      continue;
    }
    if (rc != Z_OK) return Fail(z.msg);
  }
}

}  // namespace surge::worker
