#include "node/metrics.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <variant>
#include <ctime>
#include <fstream>
#include <sstream>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

namespace sluice {
namespace {

double tv_s(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

CpuTimes from_rusage(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return {tv_s(ru.ru_utime), tv_s(ru.ru_stime), static_cast<uint64_t>(ru.ru_nvcsw),
          static_cast<uint64_t>(ru.ru_nivcsw)};
}

// JSON has no inf/nan; a ratio over zero events is reported as 0.
double finite(double v) { return std::isfinite(v) ? v : 0.0; }

}  // namespace

std::string json_escape(std::string_view s) {
  // nlohmann's escaping; bytes that are not UTF-8 become U+FFFD rather than
  // a string no JSON reader takes.
  const std::string q = nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                                             nlohmann::json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

std::vector<unsigned> thread_cpu_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<unsigned> out;
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::string thread_cpus() {
  const std::vector<unsigned> cpus = thread_cpu_list();
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") +
           (j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

int last_cpu(pid_t tid) {
  std::ifstream in(fmt::format("/proc/self/task/{}/stat", tid));
  std::string line;
  if (!std::getline(in, line)) return -1;
  // The name (field 2) may hold spaces: fields 3 on follow the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int f = 3; rest >> field; ++f)
    if (f == 39) return std::atoi(field.c_str());
  return -1;
}

Status pin_thread(const std::vector<unsigned>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : cpus) CPU_SET(c, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc == 0) return {};
  std::string list;
  for (unsigned c : cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
  return Status::Error(fmt::format("cannot pin to CPUs {}: {}", list, strerror(rc)));
}

CpuTimes CpuTimes::process() { return from_rusage(RUSAGE_SELF); }
CpuTimes CpuTimes::thread() { return from_rusage(RUSAGE_THREAD); }

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint64_t wall_clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

uint64_t rss_max_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return uint64_t(ru.ru_maxrss) * 1024;
}

// Bucket b covers values with the same leading bit and next kSubBits bits:
// values below kSub get a bucket each, above that kSub buckets per power of
// two, so a percentile is within 1/kSub (1.6%) of the truth. 1/16 (6%) was
// too coarse to compare two p99s: a ratio of 1.05 was one bucket.
int LatencyHistogram::bucket_of(uint64_t v) {
  if (v < kSub) return static_cast<int>(v);
  int msb = 63 - std::countl_zero(v);
  int shift = msb - kSubBits;
  return (shift + 1) * kSub + static_cast<int>((v >> shift) & (kSub - 1));
}

uint64_t LatencyHistogram::bucket_high(int b) {
  if (b < kSub) return static_cast<uint64_t>(b);
  int shift = b / kSub - 1;
  uint64_t sub = static_cast<uint64_t>(b % kSub);
  return ((kSub + sub + 1) << shift) - 1;
}

void LatencyHistogram::record(uint64_t ns) {
  int b = bucket_of(ns);
  if (b >= kBuckets) b = kBuckets - 1;
  ++buckets_[b];
  ++count_;
  if (ns > max_) max_ = ns;
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
  for (int i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  max_ = std::max(max_, o.max_);
}

void LatencyHistogram::save(SnapshotOut& out) const {
  out.put<uint64_t>(count_);
  out.put<uint64_t>(max_);
  // The buckets from the first used one to max_'s: one copy. (Finding each
  // used bucket of 4,096 costs more than copying all of them.)
  int lo = 0, n = 0;
  if (count_) {
    while (!buckets_[lo]) ++lo;
    n = bucket_of(max_) - lo + 1;
  }
  out.put<uint16_t>(static_cast<uint16_t>(lo));
  out.put<uint16_t>(static_cast<uint16_t>(n));
  out.bytes(buckets_.data() + lo, size_t(n) * sizeof(uint64_t));
}

Status LatencyHistogram::load(SnapshotIn& in) {
  LatencyHistogram h;
  h.count_ = in.get<uint64_t>();
  h.max_ = in.get<uint64_t>();
  const int lo = in.get<uint16_t>();
  const int n = in.get<uint16_t>();
  if (in.ok() && (lo + n > kBuckets || (n == 0) != (h.count_ == 0) ||
                  (n && bucket_of(h.max_) != lo + n - 1)))
    in.fail(fmt::format("latency buckets {} to {} of {} do not fit its maximum {} ns and its {} samples", lo,
                        lo + n - 1, kBuckets, h.max_, h.count_));
  if (in.ok()) in.bytes(h.buckets_.data() + lo, size_t(n) * sizeof(uint64_t));
  uint64_t sum = 0;
  for (int b = lo; in.ok() && b < lo + n; ++b) sum += h.buckets_[b];
  if (in.ok() && (sum != h.count_ || (n && (!h.buckets_[lo] || !h.buckets_[lo + n - 1]))))
    in.fail(fmt::format("latency buckets hold {} samples, its total says {}", sum, h.count_));
  if (!in.ok()) return Status::Error(in.what());
  *this = h;
  return {};
}

uint64_t LatencyHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * count_));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(bucket_high(i), max_);
  }
  return max_;
}

void ProcessSummary::compute() {
  const double f = clock_ghz * 1e9;
  const double events = double(events_in + events_out);
  const double bytes = double(bytes_in + bytes_out);
  const double busy = user_s + sys_s;
  cpe_u = finite(user_s * f / events);
  cpe_s = finite(sys_s * f / events);
  cpe_p = cpe_u + cpe_s;
  cpe_i = finite(std::max(0.0, cores * wall_s - busy) * f / events);
  cpb_p = finite(busy * f / bytes);
  epe_joules = finite(peak_watts * (cpe_p + 0.7 * cpe_i) / (cores * f));
}

// The summary's fields, once: to_json() writes them and summary_from_json()
// reads them back (sluice-deploy's report is the same fields after its own).
namespace {

using Member = std::variant<uint64_t ProcessSummary::*, uint32_t ProcessSummary::*,
                            int ProcessSummary::*, double ProcessSummary::*,
                            std::string ProcessSummary::*>;
struct Field {
  const char* key;
  Member member;
  int decimals = -1;  // doubles: rounded to this many decimals; -1: as they are
};

#define SLUICE_F(member, ...) \
  Field { #member, &ProcessSummary::member, __VA_ARGS__ }
const Field kFields[] = {
    SLUICE_F(instances),
    SLUICE_F(events_in), SLUICE_F(events_out),
    SLUICE_F(tuples_in), SLUICE_F(tuples_out),
    SLUICE_F(bytes_in),  SLUICE_F(bytes_out),
    SLUICE_F(wall_s, 6), SLUICE_F(user_s, 6),
    SLUICE_F(sys_s, 6),  SLUICE_F(cores, 3),
    SLUICE_F(clock_ghz, 3), SLUICE_F(peak_watts, 1),
    SLUICE_F(cpe_p, 2), SLUICE_F(cpe_u, 2),
    SLUICE_F(cpe_s, 2), SLUICE_F(cpe_i, 2),
    SLUICE_F(cpb_p, 4), SLUICE_F(epe_joules),
    SLUICE_F(rss_max_bytes),
    SLUICE_F(ctx_voluntary), SLUICE_F(ctx_involuntary),
    SLUICE_F(lost), SLUICE_F(duplicated), SLUICE_F(corrupt),
    SLUICE_F(filtered), SLUICE_F(aggregated), SLUICE_F(joined), SLUICE_F(partitioned),
    SLUICE_F(credit_waits), SLUICE_F(held_back_s, 3), SLUICE_F(behind_events),
    SLUICE_F(read_bytes),
    SLUICE_F(replayed), SLUICE_F(deduplicated), SLUICE_F(reconnects),
    SLUICE_F(rejected), SLUICE_F(kafka_commits), SLUICE_F(kafka_rows),
    SLUICE_F(checkpoints), SLUICE_F(snapshot_bytes), SLUICE_F(restored_checkpoint), SLUICE_F(restored_tuples),
    SLUICE_F(restored_bytes), SLUICE_F(restored_first_arrival_s, 6),
    SLUICE_F(checkpoint_wait_s, 6), SLUICE_F(checkpoint_write_s, 6),
    SLUICE_F(first_arrival_s, 6), SLUICE_F(last_arrival_s, 6),
    SLUICE_F(threads), SLUICE_F(inline_events),
    SLUICE_F(metrics_url),
    SLUICE_F(cpus), SLUICE_F(last_cpu),
};
#undef SLUICE_F

using Json = nlohmann::ordered_json;  // keys in the order written

// A figure for people: finite (JSON has no inf/nan), rounded where asked.
double num(double v, int decimals = -1) {
  v = finite(v);
  if (decimals < 0) return v;
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

Json pct_json(double p50, double p99, double max) {
  return {{"p50", num(p50, 1)}, {"p99", num(p99, 1)}, {"max", num(max, 1)}};
}

void pct_from(const Json& n, const char* key, double* p50, double* p99, double* max) {
  auto it = n.find(key);
  if (it == n.end()) return;
  *p50 = it->value("p50", *p50);
  *p99 = it->value("p99", *p99);
  *max = it->value("max", *max);
}

// Text for files and pipes: one line, bytes that are not UTF-8 replaced.
std::string text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json measured(const ProcessSummary& s) {
  Json out = Json::object();
  for (const Field& f : kFields)
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(s.*m)>;
          if constexpr (std::is_same_v<T, double>) out[f.key] = num(s.*m, f.decimals);
          else out[f.key] = s.*m;
        },
        f.member);
  out["latency_us"] = pct_json(s.latency_p50_us, s.latency_p99_us, s.latency_max_us);
  const BurstSummary& b = s.burst;
  if (b.bursts)
    out["burst"] = {{"bursts", b.bursts}, {"head_events", b.head_events},
                    {"processing_us", pct_json(b.processing_p50_us, b.processing_p99_us, b.processing_max_us)},
                    {"head_us", pct_json(b.head_p50_us, b.head_p99_us, b.head_max_us)},
                    {"tail_us", pct_json(b.tail_p50_us, b.tail_p99_us, b.tail_max_us)}};
  Json stages = Json::array();
  for (const auto& st : s.stages) {
    Json blocked = Json::object();
    for (int r = 0; r < kBlockReasons; ++r) blocked[block_reason_name(r)] = num(st.blocked_s[r], 6);
    stages.push_back({{"name", st.name}, {"user_s", num(st.user_s, 6)}, {"sys_s", num(st.sys_s, 6)},
                      {"events", st.events}, {"ctx_voluntary", st.ctx_voluntary},
                      {"ctx_involuntary", st.ctx_involuntary}, {"cpus", st.cpus}, {"last_cpu", st.last_cpu},
                      {"blocked_s", blocked}});
  }
  Json links = Json::array();
  for (const auto& l : s.links) {
    Json j = {{"name", l.name}, {"direction", l.out ? "out" : "in"}, {"frames", l.frames},
              {"bytes", l.bytes}, {"syscalls", l.syscalls}, {"credit_waits", l.credit_waits},
              {"credit_wait_s", num(l.credit_wait_s, 6)}};
    if (!l.out) {
      j["credit_window"] = l.credit_window;
      j["credit_rtt_us"] = l.credit_rtt_us;
      j["credit_msgs"] = l.credit_msgs;
    } else {
      j["in_place_frames"] = l.in_place_frames;
    }
    links.push_back(std::move(j));
  }
  Json ops = Json::array();
  for (const auto& o : s.operators)
    ops.push_back({{"name", o.name}, {"events_in", o.events_in}, {"events_out", o.events_out},
                   {"tuples_in", o.tuples_in}, {"tuples_out", o.tuples_out},
                   {"cpu_s", num(o.cpu_s, 6)}, {"state_bytes", o.state_bytes}});
  if (!s.stalls_s.empty()) {
    Json stalls = Json::array();
    for (const auto& st : s.stalls_s) stalls.push_back({num(st[0], 6), num(st[1], 6)});
    out["stalls_s"] = std::move(stalls);
  }
  out["stages"] = std::move(stages);
  out["links"] = std::move(links);
  out["operators"] = std::move(ops);
  return out;
}

}  // namespace

const char* block_reason_name(int r) {
  static const char* names[kBlockReasons] = {"ring_full", "ring_empty", "no_credit"};
  return r >= 0 && r < kBlockReasons ? names[r] : "?";
}

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::string progress_line(double since_start_s, double dt_s, const ProgressCounts& now,
                          const ProgressCounts& last, bool in, bool out) {
  auto side = [&](const char* name, uint64_t ev, uint64_t ev0, uint64_t by, uint64_t by0) {
    const double dt = dt_s > 0 ? dt_s : 1;
    return fmt::format("{} {} events ({:.0f}/s, {:.2f} Gb/s)", name, ev, (ev - ev0) / dt,
                       (by - by0) * 8.0 / dt / 1e9);
  };
  std::string line = fmt::format("{:.0f} s:", since_start_s);
  if (in) line += " " + side("in", now.events_in, last.events_in, now.bytes_in, last.bytes_in);
  if (in && out) line += ",";
  if (out) line += " " + side("out", now.events_out, last.events_out, now.bytes_out, last.bytes_out);
  return line;
}

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

const double LiveHistogram::kLe[kBounds] = {1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3,
                                            2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1,  0.2,
                                            0.5,  1,    2,    5,    10};

uint64_t LiveHistogram::cumulative(int i) const {
  uint64_t c = 0;
  for (int b = 0; b <= i && b <= kBounds; ++b) c += counts_[b].load(std::memory_order_relaxed);
  return c;
}

void LiveHistogram::merge_into(uint64_t* cum, double* sum) const {
  uint64_t c = 0;
  for (int b = 0; b <= kBounds; ++b) {
    c += counts_[b].load(std::memory_order_relaxed);
    cum[b] += c;
  }
  *sum += sum_s();
}

std::string ProcessSummary::measured_json() const { return text(measured(*this)); }

std::string ProcessSummary::to_json() const {
  Json j = {{"name", name}, {"role", role}, {"ok", ok}, {"error", error}};
  j.update(measured(*this));  // after the identity, in the order written
  return text(j);
}

Status summary_from_json(const std::string& text, ProcessSummary* out) {
  try {
    const Json n = Json::parse(text);
    if (!n.is_object()) return Status::Error("summary is not a JSON object");
    ProcessSummary s;
    s.name = n.value("name", s.name);
    s.role = n.value("role", s.role);
    s.error = n.value("error", s.error);
    s.ok = n.value("ok", s.ok);
    for (const Field& f : kFields) {
      auto v = n.find(f.key);
      if (v == n.end()) continue;
      std::visit([&](auto m) { v->get_to(s.*m); }, f.member);
    }
    pct_from(n, "latency_us", &s.latency_p50_us, &s.latency_p99_us, &s.latency_max_us);
    if (auto b = n.find("burst"); b != n.end()) {
      s.burst.bursts = b->value("bursts", uint64_t{0});
      s.burst.head_events = b->value("head_events", uint64_t{0});
      pct_from(*b, "processing_us", &s.burst.processing_p50_us, &s.burst.processing_p99_us,
               &s.burst.processing_max_us);
      pct_from(*b, "head_us", &s.burst.head_p50_us, &s.burst.head_p99_us, &s.burst.head_max_us);
      pct_from(*b, "tail_us", &s.burst.tail_p50_us, &s.burst.tail_p99_us, &s.burst.tail_max_us);
    }
    for (const Json& e : n.value("stalls_s", Json::array()))
      s.stalls_s.push_back({e.at(0).get<double>(), e.at(1).get<double>()});
    for (const Json& e : n.value("stages", Json::array())) {
      StageSummary ss;
      e.at("name").get_to(ss.name);
      e.at("user_s").get_to(ss.user_s);
      e.at("sys_s").get_to(ss.sys_s);
      e.at("events").get_to(ss.events);
      ss.ctx_voluntary = e.value("ctx_voluntary", ss.ctx_voluntary);
      ss.ctx_involuntary = e.value("ctx_involuntary", ss.ctx_involuntary);
      ss.cpus = e.value("cpus", ss.cpus);
      ss.last_cpu = e.value("last_cpu", ss.last_cpu);
      if (auto b = e.find("blocked_s"); b != e.end())
        for (int r = 0; r < kBlockReasons; ++r) ss.blocked_s[r] = b->value(block_reason_name(r), 0.0);
      s.stages.push_back(std::move(ss));
    }
    for (const Json& e : n.value("links", Json::array())) {
      LinkSummary l;
      e.at("name").get_to(l.name);
      l.out = e.at("direction").get<std::string>() == "out";
      e.at("frames").get_to(l.frames);
      e.at("bytes").get_to(l.bytes);
      e.at("syscalls").get_to(l.syscalls);
      e.at("credit_waits").get_to(l.credit_waits);
      e.at("credit_wait_s").get_to(l.credit_wait_s);
      l.credit_window = e.value("credit_window", uint64_t{0});
      l.credit_rtt_us = e.value("credit_rtt_us", uint64_t{0});
      l.credit_msgs = e.value("credit_msgs", uint64_t{0});
      l.in_place_frames = e.value("in_place_frames", uint64_t{0});
      s.links.push_back(std::move(l));
    }
    for (const Json& e : n.value("operators", Json::array())) {
      OperatorSummary o;
      e.at("name").get_to(o.name);
      e.at("events_in").get_to(o.events_in);
      e.at("events_out").get_to(o.events_out);
      e.at("tuples_in").get_to(o.tuples_in);
      e.at("tuples_out").get_to(o.tuples_out);
      e.at("cpu_s").get_to(o.cpu_s);
      o.state_bytes = e.value("state_bytes", o.state_bytes);
      s.operators.push_back(std::move(o));
    }
    *out = std::move(s);
    return {};
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(fmt::format("summary is not valid JSON: {}", e.what()));
  }
}

}  // namespace sluice
