// The transport registry: one place maps LinkOptions::transport to the
// carrier that builds a link's ends. A carrier not built in answers with a
// Status naming the ones that are.
#include "transport/transport.h"

#include "transport/link.h"
#include "transport/fabric/fabric.h"
#include "transport/tcp/tcp.h"
#include "transport/ucx/ucx.h"

namespace sluice {

namespace {
Status not_built(const std::string& t) {
  return Status::Error("transport '" + t + "' is not built in this version; known: tcp, fabric, ucx");
}
}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool,
                                        uint32_t first_slot, TransportContext& ctx, Status* st) {
  if (opts.transport == "tcp") return tcp::make_listener(opts, pool, first_slot, st);
  if (opts.transport == "fabric") return fabric::make_listener(opts, pool, first_slot, ctx, st);
  if (opts.transport == "ucx") return ucx::make_listener(opts, pool, first_slot, ctx, st);
  *st = not_built(opts.transport);
  return nullptr;
}

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, TransportContext& ctx,
                                    Status* st) {
  if (opts.transport == "tcp") return tcp::make_sender(opts, pool, st);
  if (opts.transport == "fabric") return fabric::make_sender(opts, pool, ctx, st);
  if (opts.transport == "ucx") return ucx::make_sender(opts, pool, ctx, st);
  *st = not_built(opts.transport);
  return nullptr;
}

}  // namespace sluice
