// The compact traffic flags: each --stage and --spike value becomes one
// item of its list, and a bad value names the list and the flag.
#include "coordinator/config/traffic_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace surge::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(TrafficFlagsTest, StageAndSpikeFlagsMakeTheirListItems) {
  surge::v1::TrafficCfg t;
  ASSERT_TRUE(ParseStageFlag("10s@2", &t).ok());
  ASSERT_TRUE(ParseStageFlag("4r@1-3", &t).ok());
  ASSERT_TRUE(ParseStageFlag("20s@5-80:exp", &t).ok());
  ASSERT_TRUE(ParseSpikeFlag("40:3:4", &t).ok());
  ASSERT_EQ(t.stages_size(), 3);
  EXPECT_EQ(t.stages(0).duration_s(), 10);
  EXPECT_EQ(t.stages(0).rate_rps(), 2);
  EXPECT_EQ(t.stages(1).num_requests(), 4u);
  EXPECT_EQ(t.stages(1).ramp_up_strategy(), surge::v1::RAMP_UP_STRATEGY_LINEAR);
  EXPECT_EQ(t.stages(2).ramp_up_strategy(), surge::v1::RAMP_UP_STRATEGY_EXPONENTIAL);
  EXPECT_EQ(t.stages(2).ramp_up_end_rps(), 80);
  EXPECT_EQ(t.spikes(0).rate_multiplier(), 4);
  const absl::Status bad = ParseStageFlag("10m@2", &t);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("  traffic_cfg.stages = \"10m@2\": LENGTH"));
  EXPECT_THAT(std::string(ParseSpikeFlag("40:3", &t).message()),
              HasSubstr("  traffic_cfg.spikes = \"40:3\": must be AT_S:DURATION_S:MULTIPLIER"));
}

}  // namespace
}  // namespace surge::coordinator
