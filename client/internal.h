// client/: the client library behind include/sluice/; may include every
// folder below it (level 6, beside deploy/).
//
// A publisher or subscriber is one instance of an application process of
// a deployment (role publisher or subscriber), assembled by the runtime as
// every program's (runtime/process.h, build_app_instance): the links, the
// credits, acknowledgements and replay, the stages and their counters are
// the node's own. What is the application's is one stage: a publisher's
// receive stage takes what the application committed (AppSource), a
// subscriber's send stage hands what arrived to the application's poll
// (AppDestination), through a ring sized to the pool, so it never fills.
#pragma once

#include <atomic>
#include <string>

#include "graph/config.h"
#include "node/metrics.h"
#include "node/node.h"
#include "runtime/process.h"
#include "sluice/types.h"

namespace sluice::client {

// The end an application connects as, read from its Connect.
struct Endpoint {
  Deployment d;
  size_t index = 0;
  uint32_t instance = 0;
  std::string summary;  // where its summary goes ("": nowhere)
  std::string attach;   // where "PID START_TICKS" goes once it is open ("": nowhere)
  // What the application writes (a publisher: what it sends) or reads (a
  // subscriber: what it receives).
  Schema schema;
};
Status open_endpoint(const Connect& c, Role role, Endpoint* out);

Layout layout_of(const Schema& s);
Result error(Status st);

// RUN/apps/NAME.pid: this process has the end now (sluice-deploy waits for it).
void write_attach(const Endpoint& e);

// The end's summary once its instance was joined: the counters and the
// stages' and links' reports, as a program's (the measured interval from
// its first event, t0 and the CPU times then).
struct Measure {
  std::atomic<bool> started{false};
  double t0 = 0;
  CpuTimes cpu0;
  void first() {
    if (started.exchange(true)) return;
    t0 = now_s();
    cpu0 = CpuTimes::process();
  }
};
void summarize(const Endpoint& e, const Instance& in, const Measure& m, ProcessSummary* s);
Status write_summary(const Endpoint& e, const ProcessSummary& s);

// Waits up to `ms` (-1: no limit) on an fd; true if it is readable.
bool wait_fd(int fd, int ms);
// Milliseconds left until `deadline_ns` (mono_ns), at least 0.
int ms_until(uint64_t deadline_ns);

}  // namespace sluice::client
