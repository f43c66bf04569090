#include "client/url.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseBaseUrlTest, HostAndPort) {
  auto url = ParseBaseUrl("http://127.0.0.1:8000");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->scheme, "http");
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8000);
  EXPECT_EQ(url->path_prefix, "");
  EXPECT_EQ(url->HostHeader(), "127.0.0.1:8000");
  EXPECT_EQ(url->Origin(), "http://127.0.0.1:8000");
}

TEST(ParseBaseUrlTest, DefaultPorts) {
  auto http = ParseBaseUrl("http://example.com");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->port, 80);
  EXPECT_EQ(http->HostHeader(), "example.com");
  auto https = ParseBaseUrl("HTTPS://example.com/");
  ASSERT_TRUE(https.ok());
  EXPECT_EQ(https->scheme, "https");
  EXPECT_EQ(https->port, 443);
  EXPECT_EQ(https->path_prefix, "");
}

TEST(ParseBaseUrlTest, PathPrefixLosesTrailingSlashes) {
  auto url = ParseBaseUrl("http://h:8000/prefix/v2//");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "h");
  EXPECT_EQ(url->path_prefix, "/prefix/v2");
}

TEST(ParseBaseUrlTest, Ipv6Literal) {
  auto url = ParseBaseUrl("http://[::1]:9000/p");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9000);
  EXPECT_EQ(url->path_prefix, "/p");
  EXPECT_EQ(url->HostHeader(), "[::1]:9000");
  auto no_port = ParseBaseUrl("http://[fe80::2]");
  ASSERT_TRUE(no_port.ok());
  EXPECT_EQ(no_port->port, 80);
  EXPECT_EQ(no_port->HostHeader(), "[fe80::2]");
}

struct BadCase {
  const char* url;
  const char* why;  // substring of the message
};

class ParseBaseUrlErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseBaseUrlErrorTest, NamesTheFieldAndWhatIsAllowed) {
  auto url = ParseBaseUrl(GetParam().url);
  ASSERT_FALSE(url.ok()) << GetParam().url;
  EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(url.status().message());
  EXPECT_THAT(message, StartsWith("base_url: "));
  EXPECT_THAT(message, HasSubstr(GetParam().why));
  EXPECT_THAT(message, HasSubstr("http[s]://host[:port][/path]"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseBaseUrlErrorTest,
    ::testing::Values(
        BadCase{"", "is empty"}, BadCase{"127.0.0.1:8000", "no scheme"},
        BadCase{"ftp://h", "only http and https are allowed"}, BadCase{"http://", "no host"},
        BadCase{"http://:80", "no host"}, BadCase{"http://h:", "empty port"},
        BadCase{"http://h:0", "1..65535"}, BadCase{"http://h:65536", "1..65535"},
        BadCase{"http://h:8o", "1..65535"}, BadCase{"http://h:-1", "1..65535"},
        BadCase{"http://h/p?x=1", "query or fragment"}, BadCase{"http://u:p@h", "user info"},
        BadCase{"http://[::1", "unterminated IPv6"}, BadCase{"http://[::1]x", "junk after"},
        BadCase{"http://h st", "whitespace"}));

}  // namespace
}  // namespace surge::client
