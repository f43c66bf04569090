#include "coordinator/dispatch/clock_stamps.h"

namespace surge::coordinator {

surge::v1::Envelope ClockProbeReplyFor(const surge::v1::ClockProbe& probe, int64_t t2_coord_ns,
                                       Clock& clock) {
  surge::v1::Envelope reply;
  auto* r = reply.mutable_clock_probe_reply();
  r->set_probe_seq(probe.probe_seq());
  r->set_t1_worker_ns(probe.t1_worker_ns());
  r->set_t2_coord_ns(t2_coord_ns);
  r->set_t3_coord_ns(ToNanos(clock.Now()));
  return reply;
}

void StampHeartbeatAck(const surge::v1::Heartbeat& heartbeat, int64_t t2_coord_ns, Clock& clock,
                       surge::v1::HeartbeatAck* ack) {
  ack->set_hb_seq(heartbeat.hb_seq());
  ack->set_t1_worker_ns(heartbeat.t1_worker_ns());
  ack->set_t2_coord_ns(t2_coord_ns);
  ack->set_t3_coord_ns(ToNanos(clock.Now()));
}

}  // namespace surge::coordinator
