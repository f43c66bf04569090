#include "common/zmq_transport.h"

#include <zmq.hpp>

#include "absl/strings/str_cat.h"

namespace surge {
namespace {

absl::Status FromZmq(const zmq::error_t& e, const std::string& what) {
  if (e.num() == EHOSTUNREACH || e.num() == EAGAIN) {
    return absl::UnavailableError(absl::StrCat(what, ": ", e.what()));
  }
  return absl::InternalError(absl::StrCat(what, ": ", e.what()));
}

absl::StatusOr<std::optional<zmq::message_t>> PollOne(zmq::socket_t& socket,
                                                     std::chrono::milliseconds timeout) {
  zmq::pollitem_t items[] = {{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0}};
  try {
    zmq::poll(items, 1, timeout);
  } catch (const zmq::error_t& e) {
    // A signal (Ctrl-C) interrupted the wait: that is a timeout, not an error.
    if (e.num() == EINTR) return std::nullopt;
    throw;
  }
  if ((items[0].revents & ZMQ_POLLIN) == 0) return std::nullopt;
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return std::nullopt;
  return std::optional<zmq::message_t>(std::move(frame));
}

absl::StatusOr<surge::v1::Envelope> Parse(const zmq::message_t& frame) {
  surge::v1::Envelope envelope;
  if (!envelope.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return absl::DataLossError(absl::StrCat("frame of ", frame.size(), " bytes is not an Envelope"));
  }
  return envelope;
}

// Drains the rest of a multipart message we do not understand.
void DrainMore(zmq::socket_t& socket) {
  while (socket.get(zmq::sockopt::rcvmore)) {
    zmq::message_t rest;
    (void)socket.recv(rest, zmq::recv_flags::dontwait);
  }
}

}  // namespace

struct ZmqRouterTransport::Impl {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::router};
  std::string endpoint;
};

ZmqRouterTransport::ZmqRouterTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZmqRouterTransport::~ZmqRouterTransport() = default;

absl::StatusOr<std::unique_ptr<ZmqRouterTransport>> ZmqRouterTransport::Create(
    const std::string& endpoint) {
  auto impl = std::make_unique<Impl>();
  try {
    // A send to a vanished peer fails with EHOSTUNREACH instead of being
    // dropped silently (DISTRIBUTED.md §3).
    impl->socket.set(zmq::sockopt::router_mandatory, 1);
    impl->socket.set(zmq::sockopt::sndhwm, 10000);
    impl->socket.set(zmq::sockopt::linger, 0);
    impl->socket.bind(endpoint);
    impl->endpoint = impl->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat("cannot bind ", endpoint, ": ", e.what()));
  }
  return std::unique_ptr<ZmqRouterTransport>(new ZmqRouterTransport(std::move(impl)));
}

const std::string& ZmqRouterTransport::endpoint() const { return impl_->endpoint; }

absl::Status ZmqRouterTransport::Send(const std::string& peer,
                                      const surge::v1::Envelope& message) {
  try {
    zmq::message_t id(peer.data(), peer.size());
    zmq::message_t body(message.ByteSizeLong());
    if (!message.SerializeToArray(body.data(), static_cast<int>(body.size()))) {
      return absl::InternalError("message cannot be serialized (not sent)");
    }
    if (!impl_->socket.send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait) ||
        !impl_->socket.send(body, zmq::send_flags::dontwait)) {
      return absl::UnavailableError(absl::StrCat("send queue to ", peer, " is full"));
    }
  } catch (const zmq::error_t& e) {
    return FromZmq(e, absl::StrCat("send to ", peer));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Inbound>> ZmqRouterTransport::Receive(
    std::chrono::milliseconds timeout) {
  try {
    auto id = PollOne(impl_->socket, timeout);
    if (!id.ok()) return id.status();
    if (!id->has_value()) return std::nullopt;
    if (!impl_->socket.get(zmq::sockopt::rcvmore)) {
      return absl::DataLossError("ROUTER frame without a body");
    }
    zmq::message_t body;
    (void)impl_->socket.recv(body, zmq::recv_flags::none);
    DrainMore(impl_->socket);
    auto envelope = Parse(body);
    if (!envelope.ok()) return envelope.status();
    return std::optional<Inbound>(Inbound{(*id)->to_string(), *std::move(envelope)});
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "receive");
  }
}

struct ZmqDealerTransport::Impl {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::dealer};
};

ZmqDealerTransport::ZmqDealerTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZmqDealerTransport::~ZmqDealerTransport() = default;

absl::StatusOr<std::unique_ptr<ZmqDealerTransport>> ZmqDealerTransport::Create(
    const std::string& endpoint, const std::string& identity) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->socket.set(zmq::sockopt::routing_id, identity);
    impl->socket.set(zmq::sockopt::linger, 0);
    impl->socket.set(zmq::sockopt::reconnect_ivl, 100);
    impl->socket.set(zmq::sockopt::reconnect_ivl_max, 1000);
    impl->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot connect to ", endpoint, ": ", e.what()));
  }
  return std::unique_ptr<ZmqDealerTransport>(new ZmqDealerTransport(std::move(impl)));
}

absl::Status ZmqDealerTransport::Send(const std::string& /*peer*/,
                                      const surge::v1::Envelope& message) {
  try {
    zmq::message_t body(message.ByteSizeLong());
    if (!message.SerializeToArray(body.data(), static_cast<int>(body.size()))) {
      return absl::InternalError("message cannot be serialized (not sent)");
    }
    if (!impl_->socket.send(body, zmq::send_flags::dontwait)) {
      return absl::UnavailableError("send queue to the coordinator is full");
    }
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "send to coordinator");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Inbound>> ZmqDealerTransport::Receive(
    std::chrono::milliseconds timeout) {
  try {
    auto frame = PollOne(impl_->socket, timeout);
    if (!frame.ok()) return frame.status();
    if (!frame->has_value()) return std::nullopt;
    DrainMore(impl_->socket);
    auto envelope = Parse(**frame);
    if (!envelope.ok()) return envelope.status();
    return std::optional<Inbound>(Inbound{std::string(), *std::move(envelope)});
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "receive");
  }
}

}  // namespace surge
