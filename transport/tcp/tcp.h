// The tcp transport: one TCP connection per link, three encodings (capnp,
// copy, sg) of the same frames. See tcp.cc for the lifecycle and codec.h for
// the wire.
#pragma once

#include <memory>

#include "transport/transport.h"

namespace sluice::tcp {

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, Status* st);
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, const SlotPool& pool,
                                    SlotReleaser& releaser, Status* st);

}  // namespace sluice::tcp
