#include "app/coordinator_command.h"

#include "absl/strings/str_cat.h"
#include "app/run_command.h"
#include "common/role_options.h"

namespace surge::app {

using surge::v1::RunConfig;

absl::StatusOr<ZmqRouterOptions> CoordinatorTransportOptions(const CoordinatorRole& role,
                                                             const RunConfig& config) {
  if (role.expect_workers < 1 || role.expect_workers > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--expect-workers ", role.expect_workers, ": must be 1 to 1024 (the workers to wait for)"));
  }
  if (auto join_timeout = JoinTimeout(role.join_timeout_s); !join_timeout.ok()) {
    return join_timeout.status();
  }
  if (config.max_concurrency() > 0 &&
      config.max_concurrency() < static_cast<uint64_t>(role.expect_workers)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-concurrency ", config.max_concurrency(), ": must be at least --expect-workers (",
        role.expect_workers, "): the cap is split over the workers, each needs one slot"));
  }
  if (absl::Status s = CheckBindSecurity(
          {role.bind, role.curve_secret_key_file, role.curve_allow_dir, role.insecure});
      !s.ok()) {
    return s;
  }
  ZmqRouterOptions options;
  if (!role.curve_secret_key_file.empty()) {
    auto secret = ReadKeyFlag("--curve-secret-key", role.curve_secret_key_file);
    if (!secret.ok()) return secret.status();
    auto allowed = ReadCurveAllowList(role.curve_allow_dir);
    if (!allowed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--curve-allow: ", allowed.status().message()));
    }
    options.curve = CurveServerOptions{*secret, *allowed};
  }
  return options;
}

int CoordinatorCommand(const RunConfig& config, const std::string& self_exe,
                       const CoordinatorRole& role, const std::string& plan_file) {
  return RunCommand(config, self_exe, {}, &role, plan_file);
}

}  // namespace surge::app
