#include "app/exit_codes.h"

#include <iostream>

namespace surge::app {

int Fail(const absl::Status& status, int code) {
  std::cerr << "surge: " << status.message() << "\n";
  return code;
}

}  // namespace surge::app
