// The simulated server's options as tests start it: every declared default
// (config.proto, through the option table) but on any free port.
#ifndef SURGE_TESTS_SIMSERVER_TEST_SIM_SERVER_CONFIG_H_
#define SURGE_TESTS_SIMSERVER_TEST_SIM_SERVER_CONFIG_H_

#include "coordinator/config/option_table.h"
#include "surge/v1/config.pb.h"

namespace surge::testing {

// 127.0.0.1, port 0, model "surge-sim", 1 thread, TTFT 20 ms, 2 ms per
// token, no faults (fault_after_tokens 1, fault_stall_ms 1000).
inline surge::v1::SimServerConfig TestSimServerConfig() {
  surge::v1::SimServerConfig config = coordinator::WithDefaults<surge::v1::SimServerConfig>();
  config.set_port(0);
  return config;
}

}  // namespace surge::testing

#endif  // SURGE_TESTS_SIMSERVER_TEST_SIM_SERVER_CONFIG_H_
