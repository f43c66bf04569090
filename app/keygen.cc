#include "app/keygen.h"

#include <iostream>

#include "app/exit_codes.h"
#include "common/zmq_transport.h"

namespace surge::app {

int KeygenCommand(const std::string& out_dir, const std::string& name) {
  auto files = WriteCurveKeyPair(out_dir, name);
  if (!files.ok()) {
    std::cerr << "surge keygen: " << files.status().message() << "\n";
    return files.status().code() == absl::StatusCode::kInvalidArgument ? kExitConfigError
                                                                       : kExitFailure;
  }
  auto public_key = ReadCurveKeyFile(files->public_key);
  std::cout << "secret key: " << files->secret_key.string()
            << " (mode 0600; keep it on this machine, never share it)\n"
            << "public key: " << files->public_key.string() << " ("
            << (public_key.ok() ? *public_key : std::string("unreadable")) << ")\n"
            << "One pair per machine: run surge keygen once for the coordinator and once for "
               "each worker.\n"
            << "If this pair is the coordinator's: surge coordinator --curve-secret-key "
            << files->secret_key.string()
            << " --curve-allow DIR (DIR holds each worker's .pub); give "
            << files->public_key.string() << " to every worker (--curve-server-key).\n"
            << "If this pair is a worker's: surge worker --curve-secret-key "
            << files->secret_key.string() << " --curve-server-key COORDINATOR.pub; copy "
            << files->public_key.string() << " into the coordinator's --curve-allow directory.\n";
  return kExitOk;
}

}  // namespace surge::app
