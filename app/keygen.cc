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
            << "Coordinator: --curve-secret-key " << files->secret_key.string()
            << " and give its .pub to every worker (--curve-server-key).\n"
            << "Worker: --curve-secret-key " << files->secret_key.string()
            << " and copy its .pub into the coordinator's --curve-allow directory.\n";
  return kExitOk;
}

}  // namespace surge::app
