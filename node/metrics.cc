#include "node/metrics.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <ctime>

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

std::string ProcessSummary::to_json() const {
  std::string stages_json;
  for (size_t i = 0; i < stages.size(); ++i) {
    const auto& s = stages[i];
    stages_json += fmt::format(R"({}{{"name":"{}","user_s":{:.6f},"sys_s":{:.6f},"events":{}}})",
                               i ? "," : "", json_escape(s.name), s.user_s, s.sys_s, s.events);
  }
  std::string ops_json;
  for (size_t i = 0; i < operators.size(); ++i) {
    const auto& o = operators[i];
    ops_json += fmt::format(
        R"({}{{"name":"{}","events_in":{},"events_out":{},"tuples_in":{},"tuples_out":{},"cpu_s":{:.6f},"state_bytes":{}}})",
        i ? "," : "", json_escape(o.name), o.events_in, o.events_out, o.tuples_in, o.tuples_out,
        o.cpu_s, o.state_bytes);
  }
  return fmt::format(
      R"({{"name":"{}","role":"{}","ok":{},"error":"{}","instances":{},)"
      R"("events_in":{},"events_out":{},"tuples_in":{},"tuples_out":{},"bytes_in":{},"bytes_out":{},)"
      R"("wall_s":{:.6f},"user_s":{:.6f},"sys_s":{:.6f},"cores":{:.3f},"clock_ghz":{:.3f},"peak_watts":{:.1f},)"
      R"("cpe_p":{:.2f},"cpe_u":{:.2f},"cpe_s":{:.2f},"cpe_i":{:.2f},"cpb_p":{:.4f},"epe_joules":{:.4e},)"
      R"("rss_max_bytes":{},"lost":{},"duplicated":{},"corrupt":{},"filtered":{},"aggregated":{},"joined":{},)"
      R"("latency_us":{{"p50":{:.1f},"p99":{:.1f},"max":{:.1f}}},"credit_waits":{},"metrics_url":"{}",)"
      R"("stages":[{}],"operators":[{}]}})",
      json_escape(name), json_escape(role), ok ? "true" : "false", json_escape(error), instances,
      events_in, events_out, tuples_in, tuples_out, bytes_in, bytes_out, wall_s, user_s, sys_s,
      cores, clock_ghz, peak_watts, cpe_p, cpe_u, cpe_s, cpe_i, cpb_p, epe_joules, rss_max_bytes,
      lost, duplicated, corrupt, filtered, aggregated, joined, latency_p50_us, latency_p99_us, latency_max_us,
      credit_waits, json_escape(metrics_url), stages_json, ops_json);
}

Status summary_from_json(const std::string& text, ProcessSummary* out) {
  try {
    YAML::Node n = YAML::Load(text);
    if (!n.IsMap()) return Status::Error("summary is not a JSON object");
    ProcessSummary s;
    auto str = [&](const char* k, std::string* v) {
      if (n[k]) *v = n[k].as<std::string>();
    };
    auto u64 = [&](const char* k, uint64_t* v) {
      if (n[k]) *v = n[k].as<uint64_t>();
    };
    auto dbl = [&](const char* k, double* v) {
      if (n[k]) *v = n[k].as<double>();
    };
    str("name", &s.name);
    str("role", &s.role);
    str("error", &s.error);
    str("metrics_url", &s.metrics_url);
    if (n["ok"]) s.ok = n["ok"].as<bool>();
    if (n["instances"]) s.instances = n["instances"].as<uint32_t>();
    u64("events_in", &s.events_in);
    u64("events_out", &s.events_out);
    u64("tuples_in", &s.tuples_in);
    u64("tuples_out", &s.tuples_out);
    u64("bytes_in", &s.bytes_in);
    u64("bytes_out", &s.bytes_out);
    dbl("wall_s", &s.wall_s);
    dbl("user_s", &s.user_s);
    dbl("sys_s", &s.sys_s);
    dbl("cores", &s.cores);
    dbl("clock_ghz", &s.clock_ghz);
    dbl("peak_watts", &s.peak_watts);
    dbl("cpe_p", &s.cpe_p);
    dbl("cpe_u", &s.cpe_u);
    dbl("cpe_s", &s.cpe_s);
    dbl("cpe_i", &s.cpe_i);
    dbl("cpb_p", &s.cpb_p);
    dbl("epe_joules", &s.epe_joules);
    u64("rss_max_bytes", &s.rss_max_bytes);
    u64("lost", &s.lost);
    u64("duplicated", &s.duplicated);
    u64("corrupt", &s.corrupt);
    u64("filtered", &s.filtered);
    u64("aggregated", &s.aggregated);
    u64("joined", &s.joined);
    u64("credit_waits", &s.credit_waits);
    if (auto l = n["latency_us"]) {
      if (l["p50"]) s.latency_p50_us = l["p50"].as<double>();
      if (l["p99"]) s.latency_p99_us = l["p99"].as<double>();
      if (l["max"]) s.latency_max_us = l["max"].as<double>();
    }
    if (auto st = n["stages"]) {
      for (const auto& e : st) {
        StageSummary ss;
        ss.name = e["name"].as<std::string>();
        ss.user_s = e["user_s"].as<double>();
        ss.sys_s = e["sys_s"].as<double>();
        ss.events = e["events"].as<uint64_t>();
        s.stages.push_back(std::move(ss));
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
