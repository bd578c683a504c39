// The ucx carrier: a link over a UCX endpoint (ucx.cc says how).
#pragma once

#include <memory>

#include "transport/link.h"
#include "transport/transport.h"

namespace sluice::ucx {

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
                                        TransportContext& ctx, Status* st);
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, TransportContext& ctx,
                                    Status* st);

}  // namespace sluice::ucx
