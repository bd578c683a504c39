// The transport registry: one place maps LinkOptions::transport to the
// carrier that builds a link's ends. A carrier not built in answers with a
// Status naming the ones that are.
#include "transport/transport.h"

#include "transport/link.h"
#include "transport/tcp/tcp.h"

namespace sluice {

namespace {
Status not_built(const std::string& t) {
  return Status::Error("transport '" + t + "' is not built in this version; known: tcp");
}
}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool,
                                        uint32_t first_slot, TransportContext& ctx, Status* st) {
  if (opts.transport == "tcp") return tcp::make_listener(opts, pool, first_slot, st);
  *st = not_built(opts.transport);
  return nullptr;
}

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, TransportContext& ctx,
                                    Status* st) {
  if (opts.transport == "tcp") return tcp::make_sender(opts, pool, st);
  *st = not_built(opts.transport);
  return nullptr;
}

}  // namespace sluice
