// The carriers every conformance test runs on, each mode a line: the
// conformance suite (conformance_test.cc) and the acknowledgement and replay
// suite (replay_test.cc) share it, and so do the client library's ends
// (client/client_test.cc), which select the mode by a deployment's keys: each
// line gives both, and graph/config_presets_test.cc checks that the keys
// give the options. A new carrier is done when it passes all three: add one
// line to kCarriers.
#pragma once

#include <functional>

#include "transport/link.h"

namespace sluice::testing {

// One carrier in one of its modes: how a link's options select it.
struct CarrierCase {
  const char* name;
  std::function<void(LinkOptions&)> setup;
  const char* keys;  // the same mode as a deployment's top-level keys
};

inline const CarrierCase kCarriers[] = {
    {"tcp_sg", [](LinkOptions& o) { o.tcp.encoding = Encoding::kSg; }, "encoding: sg\n"},
    {"tcp_sg_select", [](LinkOptions& o) { o.tcp.encoding = Encoding::kSg; o.tcp.rx_select = true; },
      "encoding: sg\nrx_poll: select\n"},
    {"tcp_copy", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCopy; }, "encoding: copy\n"},
    {"tcp_copy_select", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCopy; o.tcp.rx_select = true; },
      "encoding: copy\nrx_poll: select\n"},
    {"tcp_copy_async", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCopy; o.tcp.async_send = true; },
      "encoding: copy\nsend_queue: async\n"},
    {"tcp_copy_async_select",
     [](LinkOptions& o) {
       o.tcp.encoding = Encoding::kCopy;
       o.tcp.async_send = o.tcp.rx_select = true;
     }, "encoding: copy\nsend_queue: async\nrx_poll: select\n"},
    {"tcp_capnp", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCapnp; }, "encoding: capnp\n"},
    {"tcp_capnp_select", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCapnp; o.tcp.rx_select = true; },
      "encoding: capnp\nrx_poll: select\n"},
    {"tcp_capnp_async", [](LinkOptions& o) { o.tcp.encoding = Encoding::kCapnp; o.tcp.async_send = true; },
      "encoding: capnp\nsend_queue: async\n"},
    {"tcp_capnp_async_select",
     [](LinkOptions& o) {
       o.tcp.encoding = Encoding::kCapnp;
       o.tcp.async_send = o.tcp.rx_select = true;
     }, "encoding: capnp\nsend_queue: async\nrx_poll: select\n"},
    {"fabric_tcp", [](LinkOptions& o) { o.transport = "fabric"; o.msg.fabric_provider = "tcp"; },
      "transport: fabric\nfabric_provider: tcp\n"},
    {"fabric_tcp_sync",
     [](LinkOptions& o) {
       o.transport = "fabric";
       o.msg.fabric_provider = "tcp";
       o.msg.sync_completion = true;
     }, "transport: fabric\nfabric_provider: tcp\nsend_completion: sync\n"},
    {"fabric_net", [](LinkOptions& o) { o.transport = "fabric"; o.msg.fabric_provider = "net"; },
      "transport: fabric\nfabric_provider: net\n"},
    {"fabric_shm", [](LinkOptions& o) { o.transport = "fabric"; o.msg.fabric_provider = "shm"; },
      "transport: fabric\nfabric_provider: shm\n"},
    {"ucx_tcp", [](LinkOptions& o) { o.transport = "ucx"; o.msg.ucx_tls = "tcp"; },
      "transport: ucx\nucx_tls: tcp\n"},
    {"ucx_sm",  // messages into pre-posted receives (rma: auto would be on here)
     [](LinkOptions& o) {
       o.transport = "ucx";
       o.msg.ucx_tls = "sm";
       o.msg.rma_set = true;
     }, "transport: ucx\nucx_tls: sm\nrma: off\n"},
    {"fabric_shm_rma",
     [](LinkOptions& o) {
       o.transport = "fabric";
       o.msg.fabric_provider = "shm";
       o.msg.rma = true;
       o.msg.rma_set = true;
     }, "transport: fabric\nfabric_provider: shm\nrma: on\n"},
    {"fabric_tcp_rma",
     [](LinkOptions& o) {
       o.transport = "fabric";
       o.msg.fabric_provider = "tcp";
       o.msg.rma = true;
       o.msg.rma_set = true;
     }, "transport: fabric\nfabric_provider: tcp\nrma: on\n"},
    {"ucx_sm_rma",
     [](LinkOptions& o) {
       o.transport = "ucx";
       o.msg.ucx_tls = "sm";
       o.msg.rma = true;
       o.msg.rma_set = true;
     }, "transport: ucx\nucx_tls: sm\nrma: on\n"},
};

}  // namespace sluice::testing
