// BodyDecoder: gzip and deflate undone piece by piece (each flushed piece
// decodes as soon as its bytes are in), other codings refused.
#include "worker/http/body_decoder.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/http/gzip_pieces.h"

namespace surge::worker {
namespace {

using ::surge::testing::Compress;
using ::surge::testing::CompressPieces;
using ::surge::testing::Wrapper;
using ::testing::StartsWith;

TEST(BodyDecoderTest, IdentityPassesBytesThrough) {
  for (const char* header : {"", "identity", " Identity "}) {
    BodyDecoder decoder(header);
    EXPECT_TRUE(decoder.identity()) << header;
    EXPECT_TRUE(decoder.supported());
    EXPECT_EQ(decoder.name(), "");
    std::string out;
    ASSERT_TRUE(decoder.Decode("data: x\n\n", out).ok());
    EXPECT_EQ(out, "data: x\n\n");
  }
}

TEST(BodyDecoderTest, EachFlushedGzipPieceDecodesWhenItArrives) {
  const std::vector<std::string> events = {"data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n",
                                           "data: [DONE]\n\n"};
  const std::vector<std::string> compressed = CompressPieces(events);
  BodyDecoder decoder("GZIP");
  EXPECT_FALSE(decoder.identity());
  EXPECT_EQ(decoder.name(), "gzip");
  for (size_t i = 0; i < events.size(); ++i) {
    std::string out;
    ASSERT_TRUE(decoder.Decode(compressed[i], out).ok());
    EXPECT_EQ(out, events[i]) << "piece " << i;
  }
}

TEST(BodyDecoderTest, BytesSplitAnywhereDecodeToTheSameText) {
  const std::string text(3000, 'q');
  const std::string gz = Compress(text + "tail");
  BodyDecoder decoder("x-gzip");
  std::string out;
  for (char c : gz) ASSERT_TRUE(decoder.Decode(std::string(1, c), out).ok());
  EXPECT_EQ(out, text + "tail");
}

TEST(BodyDecoderTest, ConcatenatedGzipMembersDecodeOneAfterTheOther) {
  BodyDecoder decoder("gzip");
  std::string out;
  ASSERT_TRUE(decoder.Decode(Compress("one ") + Compress("two"), out).ok());
  EXPECT_EQ(out, "one two");
}

TEST(BodyDecoderTest, DeflateIsReadWithAndWithoutItsZlibWrapper) {
  for (Wrapper wrapper : {Wrapper::kZlib, Wrapper::kRaw}) {
    const std::string compressed = Compress("{\"choices\":[]}", wrapper);
    BodyDecoder decoder("deflate");
    std::string out;
    // The first byte alone cannot tell which it is: held until the second.
    ASSERT_TRUE(decoder.Decode(compressed.substr(0, 1), out).ok());
    EXPECT_EQ(out, "");
    ASSERT_TRUE(decoder.Decode(compressed.substr(1), out).ok());
    EXPECT_EQ(out, "{\"choices\":[]}") << (wrapper == Wrapper::kZlib ? "zlib" : "raw");
  }
}

TEST(BodyDecoderTest, OtherCodingsAreUnsupported) {
  for (const auto& [header, name] : std::vector<std::pair<std::string, std::string>>{
           {"br", "br"}, {"zstd", "zstd"}, {"gzip, br", "gzip, br"}, {"identity, BR", "br"}}) {
    BodyDecoder decoder(header);
    EXPECT_FALSE(decoder.supported()) << header;
    EXPECT_EQ(decoder.name(), name);
    std::string out;
    EXPECT_EQ(decoder.Decode("x", out).code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(BodyDecoderTest, CorruptDataIsAnErrorThatStays) {
  BodyDecoder decoder("gzip");
  std::string out;
  const absl::Status first = decoder.Decode("data: not gzip at all\n\n", out);
  EXPECT_EQ(first.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(first.message()), StartsWith("gzip body does not decode: "));
  EXPECT_EQ(decoder.Decode(Compress("x"), out), first);
}

}  // namespace
}  // namespace surge::worker
