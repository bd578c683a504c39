// The carriers every conformance test runs on, each mode a line: the
// conformance suite (conformance_test.cc) and the acknowledgement and replay
// suite (replay_test.cc) share it. A new carrier is done when it passes both:
// add one line to kCarriers.
#pragma once

#include <functional>

#include "transport/link.h"

namespace sluice::testing {

// One carrier in one of its modes: how a link's options select it.
struct CarrierCase {
  const char* name;
  std::function<void(LinkOptions&)> setup;
};

inline const CarrierCase kCarriers[] = {
    {"tcp_sg", [](LinkOptions& o) { o.tcp.encoding = Encoding::kSg; }},
    {"tcp_sg_select", [](LinkOptions& o) { o.tcp.encoding = Encoding::kSg; o.tcp.rx_select = true; }},
    {"tcp_copy", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCopy; }},
    {"tcp_copy_select", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCopy; o.tcp.rx_select = true; }},
    {"tcp_copy_async", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCopy; o.tcp.async_send = true; }},
    {"tcp_copy_async_select",
     [](LinkOptions& o) {
       o.tcp.encoding = Encoding::kCopy;
       o.tcp.async_send = o.tcp.rx_select = true;
     }},
    {"tcp_capnp", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCapnp; }},
    {"tcp_capnp_select", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCapnp; o.tcp.rx_select = true; }},
    {"tcp_capnp_async", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCapnp; o.tcp.async_send = true; }},
    {"tcp_capnp_async_select",
     [](LinkOptions& o) {
       o.tcp.encoding = Encoding::kCapnp;
       o.tcp.async_send = o.tcp.rx_select = true;
     }},
    {"fabric_tcp", [](LinkOptions& o) { o.transport = "fabric"; o.msg.fabric_provider = "tcp"; }},
    {"fabric_tcp_sync",
     [](LinkOptions& o) {
       o.transport = "fabric";
       o.msg.fabric_provider = "tcp";
       o.msg.sync_completion = true;
     }},
    {"fabric_net", [](LinkOptions& o) { o.transport = "fabric"; o.msg.fabric_provider = "net"; }},
    {"fabric_shm", [](LinkOptions& o) { o.transport = "fabric"; o.msg.fabric_provider = "shm"; }},
    {"ucx_tcp", [](LinkOptions& o) { o.transport = "ucx"; o.msg.ucx_tls = "tcp"; }},
    {"ucx_sm",  // messages into pre-posted receives (rma: auto would be on here)
     [](LinkOptions& o) {
       o.transport = "ucx";
       o.msg.ucx_tls = "sm";
       o.msg.rma_set = true;
     }},
    {"fabric_shm_rma",
     [](LinkOptions& o) {
       o.transport = "fabric";
       o.msg.fabric_provider = "shm";
       o.msg.rma = true;
       o.msg.rma_set = true;
     }},
    {"fabric_tcp_rma",
     [](LinkOptions& o) {
       o.transport = "fabric";
       o.msg.fabric_provider = "tcp";
       o.msg.rma = true;
       o.msg.rma_set = true;
     }},
    {"ucx_sm_rma",
     [](LinkOptions& o) {
       o.transport = "ucx";
       o.msg.ucx_tls = "sm";
       o.msg.rma = true;
       o.msg.rma_set = true;
     }},
};

}  // namespace sluice::testing
