// The coordinator's side of the shared clock (R-DIST-4),
// in one place: it stamps t2 (receipt) and t3 (reply) on clock probes and
// heartbeat acks. The worker owns the estimate (common/clock_sync.h) and
// reports it in every Heartbeat; the dispatcher keeps the last report per
// worker for the results.
#ifndef SURGE_COORDINATOR_DISPATCH_CLOCK_STAMPS_H_
#define SURGE_COORDINATOR_DISPATCH_CLOCK_STAMPS_H_

#include <cstdint>

#include "common/clock.h"
#include "surge/v1/wire.pb.h"

namespace surge::coordinator {

// The reply to `probe`, received at `t2_coord_ns` (the caller reads the
// clock as soon as the message is in hand); t3 is read from `clock` here,
// as the last step before the reply is handed to the transport.
surge::v1::Envelope ClockProbeReplyFor(const surge::v1::ClockProbe& probe, int64_t t2_coord_ns,
                                       Clock& clock);

// Fills `ack` for `heartbeat` received at `t2_coord_ns`: hb_seq and t1
// echoed, t2, and t3 read from `clock` here.
void StampHeartbeatAck(const surge::v1::Heartbeat& heartbeat, int64_t t2_coord_ns, Clock& clock,
                       surge::v1::HeartbeatAck* ack);

}  // namespace surge::coordinator

#endif  // SURGE_COORDINATOR_DISPATCH_CLOCK_STAMPS_H_
