// `surge keygen`: writes a CurveZMQ key pair for the coordinator or a worker
// (R-DIST-5; docs/SECURITY.md).
#ifndef SURGE_APP_KEYGEN_H_
#define SURGE_APP_KEYGEN_H_

#include <string>

namespace surge::app {

// Writes `out_dir`/<name>.key (secret, Z85, mode 0600) and <name>.pub
// (public, Z85, mode 0644), creating `out_dir` (mode 0700) when missing, and
// prints both paths and the public key (never the secret). Refuses to
// overwrite either file. Returns 0; 2 for a bad --name/--out; 1 when a file
// exists or cannot be written (the message names it).
int KeygenCommand(const std::string& out_dir, const std::string& name);

}  // namespace surge::app

#endif  // SURGE_APP_KEYGEN_H_
