#include "node/metrics.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

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
  return {tv_s(ru.ru_utime), tv_s(ru.ru_stime)};
}

// JSON has no inf/nan; a ratio over zero events is reported as 0.
double finite(double v) { return std::isfinite(v) ? v : 0.0; }

}  // namespace

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
        else out += ch;  // UTF-8 passes through as is
    }
  }
  return out;
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

// Bucket b covers values with the same leading bit and next 4 bits: values
// below 16 get a bucket each, above that 16 buckets per power of two, so a
// percentile is within 1/16 (6%) of the truth.
int LatencyHistogram::bucket_of(uint64_t v) {
  if (v < kSub) return static_cast<int>(v);
  int msb = 63 - std::countl_zero(v);
  int shift = msb - 4;
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
  const char* fmt = "";  // for doubles
};

#define SLUICE_F(member, ...) \
  Field { #member, &ProcessSummary::member, "" __VA_ARGS__ }
const Field kFields[] = {
    SLUICE_F(instances),
    SLUICE_F(events_in), SLUICE_F(events_out),
    SLUICE_F(tuples_in), SLUICE_F(tuples_out),
    SLUICE_F(bytes_in),  SLUICE_F(bytes_out),
    SLUICE_F(wall_s, "{:.6f}"), SLUICE_F(user_s, "{:.6f}"),
    SLUICE_F(sys_s, "{:.6f}"),  SLUICE_F(cores, "{:.3f}"),
    SLUICE_F(clock_ghz, "{:.3f}"), SLUICE_F(peak_watts, "{:.1f}"),
    SLUICE_F(cpe_p, "{:.2f}"), SLUICE_F(cpe_u, "{:.2f}"),
    SLUICE_F(cpe_s, "{:.2f}"), SLUICE_F(cpe_i, "{:.2f}"),
    SLUICE_F(cpb_p, "{:.4f}"), SLUICE_F(epe_joules, "{:.4e}"),
    SLUICE_F(rss_max_bytes),
    SLUICE_F(lost), SLUICE_F(duplicated), SLUICE_F(corrupt),
    SLUICE_F(filtered), SLUICE_F(aggregated), SLUICE_F(joined), SLUICE_F(partitioned),
    SLUICE_F(credit_waits),
    SLUICE_F(replayed), SLUICE_F(deduplicated), SLUICE_F(reconnects),
    SLUICE_F(metrics_url),
    SLUICE_F(cpus), SLUICE_F(last_cpu),
};
#undef SLUICE_F

std::string pct_json(double p50, double p99, double max) {
  return fmt::format(R"({{"p50":{:.1f},"p99":{:.1f},"max":{:.1f}}})", finite(p50), finite(p99),
                     finite(max));
}

void pct_from(const YAML::Node& n, double* p50, double* p99, double* max) {
  if (!n) return;
  if (n["p50"]) *p50 = n["p50"].as<double>();
  if (n["p99"]) *p99 = n["p99"].as<double>();
  if (n["max"]) *max = n["max"].as<double>();
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

std::string ProcessSummary::measured_json() const {
  std::string out;
  for (const Field& f : kFields) {
    out += out.empty() ? "" : ",";
    out += fmt::format(R"("{}":)", f.key);
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(this->*m)>;
          if constexpr (std::is_same_v<T, double>)
            out += fmt::format(fmt::runtime(f.fmt), finite(this->*m));
          else if constexpr (std::is_same_v<T, std::string>)
            out += fmt::format(R"("{}")", json_escape(this->*m));
          else
            out += fmt::format("{}", this->*m);
        },
        f.member);
  }
  out += R"(,"latency_us":)" + pct_json(latency_p50_us, latency_p99_us, latency_max_us);
  if (burst.bursts)
    out += fmt::format(R"(,"burst":{{"bursts":{},"head_events":{},"processing_us":{},"head_us":{},"tail_us":{}}})",
                       burst.bursts, burst.head_events,
                       pct_json(burst.processing_p50_us, burst.processing_p99_us, burst.processing_max_us),
                       pct_json(burst.head_p50_us, burst.head_p99_us, burst.head_max_us),
                       pct_json(burst.tail_p50_us, burst.tail_p99_us, burst.tail_max_us));
  std::string st;
  for (const auto& s : stages) {
    std::string blocked;
    for (int r = 0; r < kBlockReasons; ++r)
      blocked += fmt::format(R"({}"{}":{:.6f})", r ? "," : "", block_reason_name(r), finite(s.blocked_s[r]));
    st += fmt::format(
        R"({}{{"name":"{}","user_s":{:.6f},"sys_s":{:.6f},"events":{},"cpus":"{}","last_cpu":{},"blocked_s":{{{}}}}})",
        st.empty() ? "" : ",", json_escape(s.name), s.user_s, s.sys_s, s.events, json_escape(s.cpus),
        s.last_cpu, blocked);
  }
  std::string li;
  for (const auto& l : links)
    li += fmt::format(
        R"({}{{"name":"{}","direction":"{}","frames":{},"bytes":{},"syscalls":{},"credit_waits":{},"credit_wait_s":{:.6f}}})",
        li.empty() ? "" : ",", json_escape(l.name), l.out ? "out" : "in", l.frames, l.bytes,
        l.syscalls, l.credit_waits, finite(l.credit_wait_s));
  std::string ops;
  for (const auto& o : operators)
    ops += fmt::format(
        R"({}{{"name":"{}","events_in":{},"events_out":{},"tuples_in":{},"tuples_out":{},"cpu_s":{:.6f},"state_bytes":{}}})",
        ops.empty() ? "" : ",", json_escape(o.name), o.events_in, o.events_out, o.tuples_in,
        o.tuples_out, finite(o.cpu_s), o.state_bytes);
  out += fmt::format(R"(,"stages":[{}],"links":[{}],"operators":[{}])", st, li, ops);
  return out;
}

std::string ProcessSummary::to_json() const {
  return fmt::format(R"({{"name":"{}","role":"{}","ok":{},"error":"{}",{}}})", json_escape(name),
                     json_escape(role), ok ? "true" : "false", json_escape(error), measured_json());
}

Status summary_from_json(const std::string& text, ProcessSummary* out) {
  try {
    YAML::Node n = YAML::Load(text);
    if (!n.IsMap()) return Status::Error("summary is not a JSON object");
    ProcessSummary s;
    if (n["name"]) s.name = n["name"].as<std::string>();
    if (n["role"]) s.role = n["role"].as<std::string>();
    if (n["error"]) s.error = n["error"].as<std::string>();
    if (n["ok"]) s.ok = n["ok"].as<bool>();
    for (const Field& f : kFields) {
      const YAML::Node v = n[f.key];
      if (!v) continue;
      std::visit(
          [&](auto m) { s.*m = v.as<std::remove_cvref_t<decltype(s.*m)>>(); }, f.member);
    }
    pct_from(n["latency_us"], &s.latency_p50_us, &s.latency_p99_us, &s.latency_max_us);
    if (auto b = n["burst"]) {
      if (b["bursts"]) s.burst.bursts = b["bursts"].as<uint64_t>();
      if (b["head_events"]) s.burst.head_events = b["head_events"].as<uint64_t>();
      pct_from(b["processing_us"], &s.burst.processing_p50_us, &s.burst.processing_p99_us,
               &s.burst.processing_max_us);
      pct_from(b["head_us"], &s.burst.head_p50_us, &s.burst.head_p99_us, &s.burst.head_max_us);
      pct_from(b["tail_us"], &s.burst.tail_p50_us, &s.burst.tail_p99_us, &s.burst.tail_max_us);
    }
    if (auto st = n["stages"]) {
      for (const auto& e : st) {
        StageSummary ss;
        ss.name = e["name"].as<std::string>();
        ss.user_s = e["user_s"].as<double>();
        ss.sys_s = e["sys_s"].as<double>();
        ss.events = e["events"].as<uint64_t>();
        if (e["cpus"]) ss.cpus = e["cpus"].as<std::string>();
        if (e["last_cpu"]) ss.last_cpu = e["last_cpu"].as<int>();
        if (auto b = e["blocked_s"])
          for (int r = 0; r < kBlockReasons; ++r)
            if (b[block_reason_name(r)]) ss.blocked_s[r] = b[block_reason_name(r)].as<double>();
        s.stages.push_back(std::move(ss));
      }
    }
    if (auto ls = n["links"]) {
      for (const auto& e : ls) {
        LinkSummary l;
        l.name = e["name"].as<std::string>();
        l.out = e["direction"].as<std::string>() == "out";
        l.frames = e["frames"].as<uint64_t>();
        l.bytes = e["bytes"].as<uint64_t>();
        l.syscalls = e["syscalls"].as<uint64_t>();
        l.credit_waits = e["credit_waits"].as<uint64_t>();
        l.credit_wait_s = e["credit_wait_s"].as<double>();
        s.links.push_back(std::move(l));
      }
    }
    if (auto ops = n["operators"]) {
      for (const auto& e : ops) {
        OperatorSummary o;
        o.name = e["name"].as<std::string>();
        o.events_in = e["events_in"].as<uint64_t>();
        o.events_out = e["events_out"].as<uint64_t>();
        o.tuples_in = e["tuples_in"].as<uint64_t>();
        o.tuples_out = e["tuples_out"].as<uint64_t>();
        o.cpu_s = e["cpu_s"].as<double>();
        if (e["state_bytes"]) o.state_bytes = e["state_bytes"].as<uint64_t>();
        s.operators.push_back(std::move(o));
      }
    }
    *out = std::move(s);
    return {};
  } catch (const YAML::Exception& e) {
    return Status::Error(fmt::format("summary is not valid JSON: {}", e.what()));
  }
}

}  // namespace sluice
