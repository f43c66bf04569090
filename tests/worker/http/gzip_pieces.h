// Compresses an answer's pieces the way a server that streams compressed
// output does: one deflate stream (gzip, zlib or raw), flushed after each
// piece (Z_SYNC_FLUSH) so each piece decodes when its bytes arrive, ended
// after the last one. For the body decoder and reader tests.
#ifndef SURGE_TESTS_WORKER_HTTP_GZIP_PIECES_H_
#define SURGE_TESTS_WORKER_HTTP_GZIP_PIECES_H_

#include <zlib.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace surge::testing {

// The wrapper of the compressed stream.
enum class Wrapper { kGzip, kZlib, kRaw };

// The compressed bytes of each of `pieces`, in order; their concatenation
// is one complete stream whose decoded text is the pieces' concatenation.
inline std::vector<std::string> CompressPieces(const std::vector<std::string>& pieces,
                                               Wrapper wrapper = Wrapper::kGzip) {
  z_stream z{};
  const int bits = wrapper == Wrapper::kGzip ? 15 + 16 : wrapper == Wrapper::kZlib ? 15 : -15;
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    std::abort();
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& piece = pieces[i];
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
    z.avail_in = static_cast<uInt>(piece.size());
    const int flush = i + 1 == pieces.size() ? Z_FINISH : Z_SYNC_FLUSH;
    std::string compressed;
    int rc = Z_OK;
    do {
      unsigned char buf[4096];
      z.next_out = buf;
      z.avail_out = sizeof(buf);
      rc = deflate(&z, flush);
      compressed.append(reinterpret_cast<const char*>(buf), sizeof(buf) - z.avail_out);
    } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    out.push_back(std::move(compressed));
  }
  deflateEnd(&z);
  return out;
}

// The whole of `text` compressed in one go.
inline std::string Compress(const std::string& text, Wrapper wrapper = Wrapper::kGzip) {
  return CompressPieces({text}, wrapper)[0];
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_WORKER_HTTP_GZIP_PIECES_H_
