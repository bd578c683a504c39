// The tcp carrier: one TCP connection per link, three encodings (capnp, copy,
// sg) of the same frames. See tcp.cc for the lifecycle, codec.h for the wire
// checks and connect.h for connection handling.
#pragma once

#include <memory>

#include "transport/link.h"
#include "transport/transport.h"

namespace sluice::tcp {

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool,
                                        uint32_t first_slot, Status* st);
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, Status* st);

}  // namespace sluice::tcp
