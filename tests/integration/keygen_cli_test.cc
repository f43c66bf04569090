// `surge keygen` through the real binary: the two files,
// their format and modes, the printed lines (the public key, never the
// secret one), refusal to overwrite, and errors with their exit codes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/integration/surge_process.h"

namespace surge::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

unsigned Mode(const fs::path& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(KeygenCliTest, WritesAZ85PairAndRefusesToOverwriteIt) {
  const fs::path dir = AbsentDir("surge_keygen_cli") / "keys";
  const Result r = RunSurge("keygen --out " + dir.string() + " --name coordinator", 30);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path secret = dir / "coordinator.key";
  const fs::path pub = dir / "coordinator.pub";
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(secret), 0600u);
  EXPECT_EQ(Mode(pub), 0644u);
  const std::regex z85_line("[0-9a-zA-Z.\\-:+=^!/*?&<>()\\[\\]{}@%$#]{40}\n");
  const std::string secret_text = Slurp(secret);
  const std::string public_text = Slurp(pub);
  EXPECT_TRUE(std::regex_match(secret_text, z85_line)) << secret_text;
  EXPECT_TRUE(std::regex_match(public_text, z85_line)) << public_text;
  EXPECT_NE(secret_text, public_text);
  EXPECT_THAT(r.output, HasSubstr("secret key: " + secret.string() + " (mode 0600"));
  EXPECT_THAT(r.output,
              HasSubstr("public key: " + pub.string() + " (" + public_text.substr(0, 40) + ")"));
  EXPECT_THAT(r.output, Not(HasSubstr(secret_text.substr(0, 40))));
  // A worker's hint names the coordinator's public key, never this pair's
  // secret one, as the server key.
  EXPECT_THAT(r.output, HasSubstr("If this pair is a worker's: surge worker --curve-secret-key " +
                                  secret.string() + " --curve-server-key COORDINATOR.pub"));
  EXPECT_THAT(r.output,
              HasSubstr("give " + pub.string() + " to every worker (--curve-server-key)"));

  const Result again = RunSurge("keygen --out " + dir.string() + " --name coordinator", 30);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.output, HasSubstr("surge keygen: " + secret.string() +
                                      " already exists; surge keygen never overwrites a key"));
  EXPECT_EQ(Slurp(secret), secret_text);
  EXPECT_EQ(Slurp(pub), public_text);

  // The default name, in the same directory: a second, different pair.
  const Result other = RunSurge("keygen --out " + dir.string(), 30);
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_NE(Slurp(dir / "surge.pub"), public_text);
}

TEST(KeygenCliTest, BadArgumentsAreConfigurationErrors) {
  const Result no_out = RunSurge("keygen", 30);
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_THAT(no_out.output, HasSubstr("--out is required"));
  const fs::path dir = AbsentDir("surge_keygen_cli_bad");
  const Result bad_name = RunSurge("keygen --out " + dir.string() + " --name ../escape", 30);
  EXPECT_EQ(bad_name.exit_code, 2);
  EXPECT_THAT(bad_name.output, HasSubstr("--name '../escape' is not a file name"));
  EXPECT_FALSE(fs::exists(dir.parent_path() / "escape.key"));
}

}  // namespace
}  // namespace surge::testing
