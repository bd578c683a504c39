#include "runtime/exporter.h"

#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "node/metrics.h"
#include "node/node.h"

namespace sluice {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// A thread's user and system seconds from /proc/self/task/TID/stat (fields
// 14 and 15, in clock ticks, after the parenthesised name).
bool thread_cpu(pid_t tid, double* user_s, double* sys_s) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');
  if (!p) return false;
  unsigned long long ut = 0, st = 0;
  // After ") ": state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt,
  // cminflt, majflt, cmajflt, utime, stime.
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return false;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  *user_s = ut / tick;
  *sys_s = st / tick;
  return true;
}

class Families {
 public:
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    for (auto& f : out_)
      if (f.name == name) return f;
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  void add(const char* name, const char* help, MetricType type, double v,
           std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric m;
    m.label = std::move(labels);
    if (type == MetricType::Counter)
      m.counter.value = v;
    else
      m.gauge.value = v;
    family(name, help, type).metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  std::vector<MetricFamily> out_;
};

constexpr auto kCounter = MetricType::Counter;
constexpr auto kGauge = MetricType::Gauge;

class Collector final : public prometheus::Collectable {
 public:
  explicit Collector(ExporterIdentity id) : id_(std::move(id)), start_(now_s()) {}

  void watch(std::vector<const Instance*> v) {
    std::lock_guard lk(mu_);
    instances_ = std::move(v);
  }
  void measure_started() {
    double expected = 0;
    measure_start_.compare_exchange_strong(expected, now_s());
  }

  std::vector<MetricFamily> Collect() const override {
    Families f;
    f.add("sluice_info", "The process: its name and role in the deployment (always 1)", kGauge, 1,
          {{"process", id_.process}, {"role", id_.role}});
    f.add("sluice_cores", "Cores given to the process (N in the CPE formulas)", kGauge, id_.cores);
    f.add("sluice_clock_hertz", "Nominal clock F in the CPE formulas", kGauge, id_.clock_ghz * 1e9);
    f.add("sluice_peak_watts", "P in the energy model", kGauge, id_.peak_watts);
    f.add("sluice_uptime_seconds", "Seconds since the process started", kGauge, now_s() - start_);
    const double m = measure_start_.load();
    f.add("sluice_measured_seconds",
          "Seconds since the first event (the interval the summary covers); 0 before it", kGauge,
          m > 0 ? now_s() - m : 0);

    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    const char* cpu_help = "CPU seconds of the whole process, by mode";
    f.add("sluice_cpu_seconds_total", cpu_help, kCounter, secs(ru.ru_utime), {{"mode", "user"}});
    f.add("sluice_cpu_seconds_total", cpu_help, kCounter, secs(ru.ru_stime), {{"mode", "system"}});
    f.add("sluice_rss_max_bytes", "Peak resident memory", kGauge, ru.ru_maxrss * 1024.0);

    std::lock_guard lk(mu_);
    uint64_t ev[2] = {0, 0}, tu[2] = {0, 0}, by[2] = {0, 0};
    uint64_t lat_cum[LiveHistogram::kBounds + 1] = {};
    double lat_sum = 0;
    bool have_latency = false;
    LiveInstance li;
    for (size_t k = 0; k < instances_.size(); ++k) {
      const Instance& in = *instances_[k];
      in.live(&li);
      const StageTotals* c[2] = {&li.in, &li.out};
      for (int d = 0; d < 2; ++d) {
        ev[d] += c[d]->events;
        tu[d] += c[d]->tuples;
        by[d] += c[d]->bytes;
      }
      if (const LiveHistogram* h = in.live_latency()) {
        h->merge_into(lat_cum, &lat_sum);
        have_latency = true;
      }
      const std::string copy = std::to_string(k);
      for (int s = 0; s < Instance::kStages; ++s) {
        const char* stage = Instance::stage_name(s);
        f.add("sluice_stage_events_total", "Events each stage handled", kCounter,
              static_cast<double>(li.stages[s].events), {{"stage", stage}, {"copy", copy}});
        for (int r = 0; r < kBlockReasons; ++r)
          f.add("sluice_stage_blocked_seconds_total",
                "Seconds each stage waited, by reason: its output ring full, its input ring "
                "empty, a downstream link without credit",
                kCounter, li.stages[s].blocked_ns[r] / 1e9,
                {{"stage", stage}, {"copy", copy}, {"reason", block_reason_name(r)}});
        double u = 0, sy = 0;
        if (pid_t tid = li.stages[s].tid; tid > 0 && thread_cpu(tid, &u, &sy)) {
          const char* help = "CPU seconds of each stage thread, by mode";
          f.add("sluice_stage_cpu_seconds_total", help, kCounter, u,
                {{"stage", stage}, {"copy", copy}, {"mode", "user"}});
          f.add("sluice_stage_cpu_seconds_total", help, kCounter, sy,
                {{"stage", stage}, {"copy", copy}, {"mode", "system"}});
        }
      }
      const char* ring_help = "Descriptors waiting in a stage ring";
      f.add("sluice_ring_descriptors", ring_help, kGauge, static_cast<double>(in.ring_size(0)),
            {{"ring", "receive_process"}, {"copy", copy}});
      f.add("sluice_ring_descriptors", ring_help, kGauge, static_cast<double>(in.ring_size(1)),
            {{"ring", "process_send"}, {"copy", copy}});
      f.add("sluice_ring_capacity_descriptors", "Descriptors a stage ring holds", kGauge,
            static_cast<double>(in.ring_capacity()), {{"copy", copy}});
      for (const LiveLink& l : li.links) {
        const std::vector<ClientMetric::Label> lab = {
            {"link", l.name}, {"direction", l.out ? "out" : "in"}, {"copy", copy}};
        f.add("sluice_link_frames_total", "Frames a link sent (out) or received (in)", kCounter,
              static_cast<double>(l.stats.frames), lab);
        f.add("sluice_link_bytes_total", "Wire bytes of a link, frame headers included", kCounter,
              static_cast<double>(l.stats.bytes), lab);
        f.add("sluice_link_syscalls_total", "Send/receive calls a link made on the data path",
              kCounter, static_cast<double>(l.stats.syscalls), lab);
        if (l.out) {
          f.add("sluice_link_credit_waits_total", "Times a sending link waited for a credit",
                kCounter, static_cast<double>(l.stats.credit_waits), lab);
          f.add("sluice_link_credit_wait_seconds_total", "Seconds a sending link waited for credits",
                kCounter, l.stats.credit_wait_ns / 1e9, lab);
          f.add("sluice_link_credits", "Credits a sending link holds now", kGauge,
                static_cast<double>(l.stats.credits), lab);
          f.add("sluice_link_in_place_frames_total",
                "Frames the last operator wrote straight into the receiver's slot (in_place), "
                "sent without a copy",
                kCounter, static_cast<double>(l.stats.in_place), lab);
        } else {
          f.add("sluice_link_slots_free",
                "A receiving link's slots posted and empty now (credits its sender holds or "
                "that are on their way back to it)",
                kGauge, static_cast<double>(l.stats.slots_free), lab);
          f.add("sluice_link_credit_window",
                "Credits a receiving link lets its sender hold now, frames on their way included "
                "(its slots unless credits: adaptive)",
                kGauge, static_cast<double>(l.stats.window), lab);
          f.add("sluice_link_credit_messages_total",
                "Credit messages a receiving link sent back (with acks, each carries the "
                "acknowledgement too)",
                kCounter, static_cast<double>(l.stats.credit_msgs), lab);
        }
      }
    }
    if (have_latency) {
      MetricFamily& h = f.family("sluice_latency_seconds",
                                 "Seconds from an event's send timestamp at the load generator to "
                                 "the sink taking it",
                                 MetricType::Histogram);
      ClientMetric m;
      m.histogram.sample_count = lat_cum[LiveHistogram::kBounds];
      m.histogram.sample_sum = lat_sum;
      for (int b = 0; b < LiveHistogram::kBounds; ++b)
        m.histogram.bucket.push_back({lat_cum[b], LiveHistogram::kLe[b]});
      m.histogram.bucket.push_back({lat_cum[LiveHistogram::kBounds],
                                    std::numeric_limits<double>::infinity()});
      h.metric.push_back(std::move(m));
    }
    // As the summary counts them: what a load generator makes is not "in",
    // what a sink takes is not "out" (its events leave nowhere).
    const bool has_in = id_.role != "loadgen", has_out = id_.role != "sink";
    const char* dirs[2] = {"in", "out"};
    for (int d = 0; d < 2; ++d) {
      if ((d == 0 && !has_in) || (d == 1 && !has_out)) continue;
      f.add("sluice_events_total", "Events received (in) and sent (out)", kCounter,
            static_cast<double>(ev[d]), {{"direction", dirs[d]}});
      f.add("sluice_tuples_total", "Tuples received (in) and sent (out)", kCounter,
            static_cast<double>(tu[d]), {{"direction", dirs[d]}});
      f.add("sluice_bytes_total", "Payload bytes received (in) and sent (out)", kCounter,
            static_cast<double>(by[d]), {{"direction", dirs[d]}});
    }
    return f.take();
  }

 private:
  const ExporterIdentity id_;
  const double start_;
  std::atomic<double> measure_start_{0};
  mutable std::mutex mu_;  // instances_: set once, read by scrapes
  std::vector<const Instance*> instances_;
};

}  // namespace

struct Exporter::Impl {
  std::shared_ptr<Collector> collector;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::string url;
  std::string address;
  int port = 0;
};

// Connects to the endpoint and hangs up: civetweb's listening thread sleeps
// in poll() for up to 2 s between looks at its stop flag, and a connection
// is what wakes it.
static void poke(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  const std::string host = address == "0.0.0.0" ? "127.0.0.1" : address == "::" ? "::1" : address;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    (void)!connect(fd, res->ai_addr, res->ai_addrlen);
    close(fd);
  }
  freeaddrinfo(res);
}

// civetweb's library set-up and tear-down (mg_init_library, mg_exit_library,
// run by each server's construction and destruction) count the servers in
// globals without a lock of their own: two exporters started at once in one
// process (two processes' threads in a test) raced there under TSan. One
// process-wide lock around both.
static std::mutex& civetweb_mutex() {
  static std::mutex mu;
  return mu;
}

Exporter::Exporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Exporter::~Exporter() {
  if (!impl_) return;
  // The server's threads stop before the collector (and what it reads) goes.
  // Stopping waits for the listening thread's poll(); connections wake it
  // (without them every process would take 2 s longer to exit).
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      poke(impl_->address, impl_->port);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  {
    std::lock_guard lk(civetweb_mutex());
    impl_->exposer.reset();
  }
  stopped.store(true);
  waker.join();
}

std::unique_ptr<Exporter> Exporter::start(const std::string& address, uint16_t port,
                                          const ExporterIdentity& id, Status* st) {
  auto impl = std::make_unique<Impl>();
  impl->collector = std::make_shared<Collector>(id);
  const bool v6 = address.find(':') != std::string::npos;
  const std::string bind = fmt::format("{}{}{}:{}", v6 ? "[" : "", address, v6 ? "]" : "", port);
  try {
    std::lock_guard lk(civetweb_mutex());
    impl->exposer = std::make_unique<prometheus::Exposer>(bind, 2);
  } catch (const std::exception& e) {
    *st = Status::Error(fmt::format("{}: cannot serve metrics on {}: {} (metrics_address, metrics_port; "
                                    "metrics: off turns the endpoint off)",
                                    id.process, bind, e.what()));
    return nullptr;
  }
  const auto ports = impl->exposer->GetListeningPorts();
  const int bound = ports.empty() ? port : ports.front();
  impl->url = fmt::format("http://{}{}{}:{}/metrics", v6 ? "[" : "", address, v6 ? "]" : "", bound);
  impl->address = address;
  impl->port = bound;
  impl->exposer->RegisterCollectable(impl->collector);
  *st = Status();
  return std::unique_ptr<Exporter>(new Exporter(std::move(impl)));
}

void Exporter::watch(std::vector<const Instance*> instances) {
  impl_->collector->watch(std::move(instances));
}
void Exporter::measure_started() { impl_->collector->measure_started(); }
std::string Exporter::url() const { return impl_->url; }

std::string Exporter::scrape() const {
  return prometheus::TextSerializer().Serialize(impl_->collector->Collect());
}

}  // namespace sluice
