// What only the message carriers (fabric, ucx) have. A tcp link ignores all
// of it; the deployment parser refuses these keys on a link whose transport
// does not use them.
#pragma once

#include <cstdint>
#include <string>

namespace sluice {

struct MsgOptions {
  std::string fabric_provider = "tcp";  // fabric: tcp | net | shm | verbs (where present)
  std::string ucx_tls = "tcp";          // ucx: UCX_TLS of the link (tcp, sm, rc, ...)
  bool sync_completion = false;         // send_completion: sync waits for each send
  // A link whose provider cannot sleep on an fd (fabric shm) polls this long
  // before it rings its peer's doorbell and sleeps; others use it as a short
  // spin before arming their wait fd.
  uint32_t spin_us = 50;
};

}  // namespace sluice
