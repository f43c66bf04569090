// common/utf8: outside text made valid UTF-8 before it enters a proto string
// (a raw 0xFF byte in a server's chunk must not make the record batch that
// carries it undecodable).
#include "common/utf8.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "surge/v1/record.pb.h"

namespace surge {
namespace {

TEST(IsValidUtf8, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ASCII"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));           // é
  EXPECT_TRUE(IsValidUtf8("\xE2\x82\xAC"));          // €
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));      // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));      // U+10FFFF
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));  // NUL is a character
}

TEST(IsValidUtf8, RejectsEveryIllFormedKind) {
  EXPECT_FALSE(
      IsValidUtf8("A\xFF"
                  "B"));                          // never valid byte
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated €
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));  // F5 lead
}

TEST(ToValidUtf8, ReplacesEachMaximalSubpartWithOneReplacementCharacter) {
  EXPECT_EQ(ToValidUtf8("A\xFF"
                        "B"),
            "A\xEF\xBF\xBD"
            "B");
  // A truncated 3-byte character is one maximal subpart: one U+FFFD.
  EXPECT_EQ(ToValidUtf8("x\xE2\x82y"), "x\xEF\xBF\xBDy");
  // Two bad bytes in a row: two U+FFFD.
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  // A surrogate's lead cannot start a valid sequence with A0: three U+FFFD
  // (ED, then the two continuation bytes on their own).
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Truncated 4-byte character at the end: one U+FFFD.
  EXPECT_EQ(ToValidUtf8("ok\xF0\x9F\x98"), "ok\xEF\xBF\xBD");
  // Valid text is unchanged.
  EXPECT_EQ(ToValidUtf8("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

TEST(ToValidUtf8, CutsAtACharacterBoundary) {
  // "é" is 2 bytes: a 4-byte limit keeps "ab" + "é", a 3-byte one only "ab".
  EXPECT_EQ(ToValidUtf8("ab\xC3\xA9z", 4), "ab\xC3\xA9");
  EXPECT_EQ(ToValidUtf8("ab\xC3\xA9z", 3), "ab");
  // The 3-byte replacement character is never cut either.
  EXPECT_EQ(ToValidUtf8("a\xFF", 3), "a");
  EXPECT_EQ(ToValidUtf8("a\xFF", 4), "a\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("abcdef", 0), "");
  EXPECT_EQ(ToValidUtf8("abcdef", 3), "abc");
}

TEST(MakeValidUtf8, ChangesOnlyInvalidText) {
  std::string good = "caf\xC3\xA9";
  EXPECT_FALSE(MakeValidUtf8(&good));
  EXPECT_EQ(good, "caf\xC3\xA9");
  std::string bad =
      "A\xFF"
      "B";
  EXPECT_TRUE(MakeValidUtf8(&bad));
  EXPECT_EQ(bad,
            "A\xEF\xBF\xBD"
            "B");
}

// Whatever the bytes, the result is valid UTF-8 by our check and by
// protobuf's: a record carrying it round-trips.
TEST(ToValidUtf8, AnyBytesBecomeAStringProtobufAccepts) {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 40);
  for (int round = 0; round < 2000; ++round) {
    std::string raw;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) raw.push_back(static_cast<char>(byte(rng)));
    const size_t limit = static_cast<size_t>(length(rng));
    const std::string text = ToValidUtf8(raw, limit);
    ASSERT_TRUE(IsValidUtf8(text)) << round;
    ASSERT_LE(text.size(), limit) << round;
    surge::v1::RequestRecord record;
    record.set_error(text);
    std::string wire;
    ASSERT_TRUE(record.SerializeToString(&wire)) << round;
    surge::v1::RequestRecord back;
    ASSERT_TRUE(back.ParseFromString(wire)) << round;
    ASSERT_EQ(back.error(), text) << round;
  }
}

// The failing input's shape: protobuf itself refuses the raw byte on the
// receiving side, which is why it must never get that far.
TEST(ToValidUtf8, RawByteMakesProtobufRefuseTheMessage) {
  surge::v1::RequestRecord record;
  record.set_error(
      "bad_chunk: A\xFF"
      "B");
  std::string wire;
  (void)record.SerializeToString(&wire);
  surge::v1::RequestRecord back;
  EXPECT_FALSE(back.ParseFromString(wire));
  record.set_error(ToValidUtf8(record.error()));
  ASSERT_TRUE(record.SerializeToString(&wire));
  EXPECT_TRUE(back.ParseFromString(wire));
}

}  // namespace
}  // namespace surge
