// The run's one redirect warning: the first failed 3xx record is named
// with what to change, later ones only counted.
#include "coordinator/results/redirect_notice.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/failure_kind.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace surge::coordinator {
namespace {

using ::surge::v1::RequestRecord;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

RequestRecord Redirected(uint64_t index, uint32_t status, const std::string& location) {
  RequestRecord r;
  r.set_index(index);
  r.set_http_status(status);
  SetFailure(r, surge::v1::FAILED, surge::v1::FAILURE_KIND_HTTP_OTHER,
             location.empty() ? absl::StrCat("http_", status, ": moved")
                              : RedirectError(status, location));
  return r;
}

TEST(RedirectNoticeTest, WarnsOncePerRunForTheFirstRedirect) {
  std::vector<std::string> warnings;
  RedirectNotice notice([&warnings](const std::string& w) { warnings.push_back(w); });
  RequestRecord ok;
  ok.set_status(surge::v1::OK);
  ok.set_http_status(200);
  notice.Add(ok);
  RequestRecord failed_503;
  failed_503.set_http_status(503);
  SetFailure(failed_503, surge::v1::FAILED, surge::v1::FAILURE_KIND_HTTP_5XX, "http_503: busy");
  notice.Add(failed_503);
  EXPECT_TRUE(warnings.empty());

  notice.Add(Redirected(3, 307, "/v2/completions"));
  notice.Add(Redirected(4, 307, "/v2/completions"));
  notice.Add(Redirected(5, 301, "/v3/completions"));
  EXPECT_EQ(notice.redirected(), 3u);
  EXPECT_THAT(warnings,
              ElementsAre("request 3 was redirected (http_307: redirect to /v2/completions (not "
                          "followed)): surge does not follow redirects, so every request to this "
                          "URL fails; set --endpoint /v2/completions (keep --base-url; if it has "
                          "a path, that path comes first) (said once per run; the summary counts "
                          "them under http_307)"));
}

TEST(RedirectNoticeTest, AdviceFollowsTheLocation) {
  EXPECT_THAT(*RedirectWarning(Redirected(0, 308, "https://api.example.com:8443/v1/completions")),
              HasSubstr("; set --base-url https://api.example.com:8443 and --endpoint "
                        "/v1/completions ("));
  EXPECT_THAT(*RedirectWarning(Redirected(0, 302, "https://other.example.com")),
              HasSubstr("; set --base-url https://other.example.com ("));
  EXPECT_THAT(*RedirectWarning(Redirected(0, 302, "")),
              HasSubstr("(http_302: moved): surge does not follow redirects, so every request to "
                        "this URL fails; point --base-url and --endpoint (keys base_url, "
                        "endpoint) at the URL the server redirects to"));
  RequestRecord not_redirect = Redirected(0, 404, "");
  EXPECT_FALSE(RedirectWarning(not_redirect).has_value());
}

}  // namespace
}  // namespace surge::coordinator
