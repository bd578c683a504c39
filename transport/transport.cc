// The transport registry: one place maps LinkOptions::transport to the code
// that builds a link end. Transports not built in answer with a Status.
#include "transport/transport.h"

#include "transport/tcp/tcp.h"

namespace sluice {

namespace {
Status not_built(const std::string& t) {
  return Status::Error("transport '" + t + "' is not built in this version; known: tcp");
}
}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, Status* st) {
  if (opts.transport == "tcp") return tcp::make_listener(opts, pool, st);
  *st = not_built(opts.transport);
  return nullptr;
}

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, const SlotPool& pool,
                                    SlotReleaser& releaser, Status* st) {
  if (opts.transport == "tcp") return tcp::make_sender(opts, pool, releaser, st);
  *st = not_built(opts.transport);
  return nullptr;
}

}  // namespace sluice
