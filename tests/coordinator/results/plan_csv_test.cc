// The plan CSV (R-OUT-2): header and rows read back exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/results/run_files.h"
#include "tests/testing/temp_dir.h"

namespace surge::coordinator {
namespace {

namespace fs = std::filesystem;
using ::surge::testing::FreshDir;

TEST(PlanCsvTest, HeaderAndRowsReadBackExactly) {
  ArrivalSchedule plan;
  plan.rate_rps = {3.0, 1.0 / 3.0};
  plan.interval_s = {0.1, 0.30000000000000004};
  plan.offset_s = {0.1, 0.4};
  plan.anomaly = {Anomaly::kNormal, Anomaly::kBurstiness};
  const fs::path path = FreshDir("plan_csv") / "x_plan.csv";
  ASSERT_TRUE(WritePlanCsv(plan, path).ok());
  std::ifstream in(path);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header, "index,rate_rps,interval_s,offset_s,anomaly");
  EXPECT_EQ(row0, "0,3,0.10000000000000001,0.10000000000000001,normal");
  EXPECT_EQ(row1, "1,0.33333333333333331,0.30000000000000004,0.40000000000000002,burstiness");
  EXPECT_EQ(std::stod("0.33333333333333331"), 1.0 / 3.0);
}

}  // namespace
}  // namespace surge::coordinator
