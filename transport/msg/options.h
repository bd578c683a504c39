// What only the message carriers (fabric, ucx) have. A tcp link ignores all
// of it; the deployment parser refuses these keys on a link whose transport
// does not use them.
#pragma once

#include <cstdint>
#include <string>

namespace sluice {

struct MsgOptions {
  std::string fabric_provider = "tcp";  // fabric: tcp | net | shm | verbs (where present)
  // ucx: UCX_TLS of the link (tcp, sm, rc, ...), or "auto": sm when both
  // ends are on one host, else tcp. The deployment resolves it from the two
  // processes' hosts (Deployment::link_options), so both ends agree; a link
  // made without one (a test's) cannot tell and takes tcp.
  std::string ucx_tls = "auto";
  bool sync_completion = false;         // send_completion: sync waits for each send
  // rma: on: the receiver's slots are writable by its sender (ucx: the
  // pool mapped with ucp_mem_map, its key sent at connect); each credit
  // names a slot and the sender writes the frame into it, then sends a
  // small note (msg.h, item 6). Off: each frame is a message into a
  // pre-posted receive.
  bool rma = false;
  // rma was set (on or off) by the deployment; else `rma: auto`: the carrier
  // decides from the link alone, so both ends agree (ucx: on over shared
  // memory, where it was measured to win; fabric: off).
  bool rma_set = false;
  // in_place: with rma where the receiver's slots are mapped here (ucx over
  // shared memory), a node's last operator may write its output straight
  // into the slot the receiver named next (TxCarrier::room); off: into its
  // own pool, and the send copies it. Never with acks.
  bool in_place = true;
  // A link whose provider cannot sleep on an fd (fabric shm) polls at most
  // this long before it rings its peer's doorbell and sleeps (less while its
  // waits outlast it: spin.h); others use it as a short spin before arming
  // their wait fd.
  uint32_t spin_us = 50;
};

// ucx_tls "auto", resolved: `one_host` when both ends share a host.
inline void resolve_ucx_tls(MsgOptions* m, bool one_host) {
  if (m->ucx_tls == "auto") m->ucx_tls = one_host ? "sm" : "tcp";
}

}  // namespace sluice
