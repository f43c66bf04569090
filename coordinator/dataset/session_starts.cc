#include "coordinator/dataset/session_starts.h"

namespace surge::coordinator {
namespace {

class SessionStartPayloads : public PayloadSource {
 public:
  explicit SessionStartPayloads(const SessionSource& sessions) : sessions_(sessions) {}
  Payload At(uint64_t index) const override { return sessions_.At(index).front().payload; }
  const std::string& name() const override { return sessions_.name(); }
  const std::vector<std::string>& warnings() const override { return sessions_.warnings(); }

 private:
  const SessionSource& sessions_;
};

}  // namespace

std::unique_ptr<PayloadSource> MakeSessionStartPayloads(const SessionSource& sessions) {
  return std::make_unique<SessionStartPayloads>(sessions);
}

SessionShape ShapeOf(const SessionSource& sessions) {
  SessionShape shape;
  const uint64_t n = sessions.num_sessions();
  shape.turns.reserve(n);
  for (uint64_t p = 0; p < n; ++p) {
    const std::vector<SessionTurnPayload> turns = sessions.At(p);
    shape.turns.push_back(static_cast<uint32_t>(turns.size()));
    for (const SessionTurnPayload& t : turns) shape.think_ns.push_back(t.think_ns);
  }
  return shape;
}

void AddLaterTurns(const SessionSource& sessions, uint64_t p, surge::v1::Assignment& start) {
  const std::vector<SessionTurnPayload> turns = sessions.At(p);
  for (size_t k = 1; k < turns.size(); ++k) {
    const Payload& payload = turns[k].payload;
    surge::v1::SessionTurn* t = start.add_next_turns();
    t->set_input_tokens(payload.input_tokens);
    t->set_max_tokens(payload.max_tokens);
    t->set_prompt_seed(payload.prompt_seed);
    t->set_prompt_text(payload.prompt_text);
    t->set_think_ns(turns[k].think_ns);
  }
}

}  // namespace surge::coordinator
