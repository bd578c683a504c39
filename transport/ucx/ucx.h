// The ucx carrier: a link over a UCX endpoint (ucx.cc says how).
#pragma once

#include <memory>
#include <string>

#include "transport/link.h"
#include "transport/transport.h"

namespace sluice::ucx {

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
                                        TransportContext& ctx, Status* st);
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, TransportContext& ctx,
                                    Status* st);

// The network interface this host reaches `host` through, as UCX names its
// devices ("lo", "eth0"): a link over ucx_tls tcp uses that one alone
// (UCX_NET_DEVICES), not a lane over every interface up when it started.
// "" when it cannot tell (then UCX picks, as it would).
std::string net_device_toward(const std::string& host);

}  // namespace sluice::ucx
