// The run's report: what the sinks' and every process's summaries add up
// to (fill_report), and how it is printed (report_json, report_table).
#include "deploy/launcher.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice {
namespace {

// Each restart's recovery: from the death to the first tuple at a sink
// after the process was started again. That tuple ends a pause of the sink
// (Verifier::arrived) that the restart falls in; a restarted sink's is its
// own first event; for a process that died before any tuple reached the
// sink (killed as the run started), the sink's first tuple. Where no sink
// paused across the restart (another path kept it fed, or the sink itself
// was restarted later and its pauses start after), the time is not known:
// -1.
void fill_recoveries(RunReport* r) {
  for (ProcessOutcome& p : r->processes) {
    p.recovery_s.assign(p.died_wall_s.size(), -1);
    for (size_t k = 0; k < p.died_wall_s.size(); ++k) {
      const double back = p.restarted_wall_s[k];
      double first = -1;
      if (p.role == Role::kSink) {
        if (k + 1 == p.died_wall_s.size() && p.have_summary && p.summary.first_arrival_s >= back)
          first = p.summary.first_arrival_s;
      } else {
        for (const ProcessOutcome& q : r->processes) {
          if (!is_end(q.role) || !q.have_summary) continue;
          for (const auto& st : q.summary.stalls_s)
            if (st[0] <= back && back <= st[1] && (first < 0 || st[1] < first)) first = st[1];
          // Its stream's first tuple came after the restart (a restored
          // sink's first_arrival_s is its own last start's: not that).
          const double a = q.summary.first_arrival_s;
          if (q.summary.restored_first_arrival_s == 0 && a > 0 && a >= back && (first < 0 || a < first))
            first = a;
        }
      }
      if (first >= 0) p.recovery_s[k] = std::max(0.0, first - p.died_wall_s[k]);
    }
  }
}

// The pipeline, as its sinks saw it: every sink's tuples and counts added up,
// over the longest of their measured intervals.
void fill_pipeline(RunReport* r) {
  uint64_t bytes = 0;
  double wall = 0;
  for (const auto& p : r->processes) {
    if (!is_end(p.role) || !p.have_summary) continue;
    const ProcessSummary& s = p.summary;
    // What a replay brought again and the sink dropped is not delivered twice.
    // A restored sink took in restored_tuples before its restart (its
    // deduplicated, restored, counts both runs).
    const uint64_t in = s.tuples_in + s.restored_tuples;
    r->tuples += in - std::min(in, s.deduplicated);
    bytes += s.bytes_in + s.restored_bytes;
    // A restored sink's wall time is its last run's (none at all when it
    // was restarted after END); what it counts is its whole stream's, so
    // the stream's interval, from the first event before the snapshot to
    // the last, is the one its tuples/s and Gb/s are over.
    double w = s.wall_s;
    if (s.restored_first_arrival_s > 0 && s.last_arrival_s > s.restored_first_arrival_s)
      w = std::max(w, s.last_arrival_s - s.restored_first_arrival_s);
    wall = std::max(wall, w);
    r->lost += s.lost;
    r->duplicated += s.duplicated;
    r->corrupt += s.corrupt;
    r->filtered += s.filtered;
    r->aggregated += s.aggregated;
    r->joined += s.joined;
    r->deduplicated += s.deduplicated;
    // Percentiles do not add up: report the worst sink's.
    r->latency_p50_us = std::max(r->latency_p50_us, s.latency_p50_us);
    r->latency_p99_us = std::max(r->latency_p99_us, s.latency_p99_us);
    r->latency_max_us = std::max(r->latency_max_us, s.latency_max_us);
  }
  for (const auto& p : r->processes) {
    r->replayed += p.summary.replayed;
    r->reconnects += p.summary.reconnects;
    r->rejected += p.summary.rejected;
  }
  // Each sink behind a key split counts the tuples it did not get (n - 1
  // times a tuple over n sinks); the pipeline counts each tuple a split sent
  // on once: the tuples into the splits' partition operators.
  for (const auto& p : r->processes)
    if (p.have_summary)
      for (const OperatorSummary& o : p.summary.operators)
        if (o.name.size() > 10 && o.name.compare(o.name.size() - 10, 10, ":partition") == 0)
          r->partitioned += o.tuples_in;
  r->tuples_per_s = wall > 0 ? r->tuples / wall : 0;
  r->gbps = wall > 0 ? bytes * 8.0 / wall / 1e9 : 0;
  // The links' cost apart from the endpoints': cycles over events, per side.
  struct Side {
    double cycles = 0, sys_cycles = 0, cpu_s = 0;
    uint64_t events = 0;
  } nodes, ends;
  for (const auto& p : r->processes) {
    if (!p.have_summary) continue;
    const ProcessSummary& s = p.summary;
    Side& side = p.role == Role::kNode ? nodes : ends;
    side.cycles += (s.user_s + s.sys_s) * s.clock_ghz * 1e9;
    side.sys_cycles += s.sys_s * s.clock_ghz * 1e9;
    side.cpu_s += s.user_s + s.sys_s;
    side.events += s.events_in + s.events_out;
  }
  if (nodes.events) {
    r->cpe_p_nodes = nodes.cycles / nodes.events;
    r->cpe_s_nodes = nodes.sys_cycles / nodes.events;
  }
  if (ends.events) {
    r->cpe_p_endpoints = ends.cycles / ends.events;
    r->cpe_s_endpoints = ends.sys_cycles / ends.events;
  }
  if (nodes.cpu_s + ends.cpu_s > 0) r->endpoints_cpu_share = ends.cpu_s / (nodes.cpu_s + ends.cpu_s);
}

}  // namespace

void fill_report(RunReport* r) {
  fill_pipeline(r);
  fill_recoveries(r);
}

using Json = nlohmann::ordered_json;  // keys in the order written

double finite(double v) { return std::isfinite(v) ? v : 0; }  // JSON has no inf or nan

std::string report_json(const RunReport& r) {
  Json procs = Json::array();
  uint64_t restarts = 0;
  // Each process: where and how it ran, then its own summary's fields
  // (ProcessSummary::measured_json, the one list of them).
  for (const auto& p : r.processes) {
    restarts += p.restarts;
    Json e = {{"name", p.name}, {"role", role_name(p.role)}, {"host", p.host}};
    if (!p.node.empty()) e["node"] = p.node;
    Json at = Json::array(), rec = Json::array();
    for (double t : p.restarted_at_s) at.push_back(finite(t));
    for (double t : p.recovery_s) rec.push_back(t >= 0 ? Json(finite(t)) : Json(nullptr));
    if (!p.settled.empty()) e["settled"] = p.settled;
    e.update(Json{{"where", p.where}, {"ok", p.ok}, {"error", p.error}, {"log", p.log_path},
                  {"restarts", p.restarts}, {"restarted_at_s", std::move(at)},
                  {"recovery_s", std::move(rec)}});
    e.update(Json::parse(p.summary.measured_json()));
    procs.push_back(std::move(e));
  }
  Json j = {{"deployment", r.deployment}, {"preset", r.preset}, {"run_dir", r.run_dir},
            {"ok", r.ok}, {"error", r.error}, {"tuples", r.tuples},
            {"tuples_per_s", finite(r.tuples_per_s)}, {"gbps", finite(r.gbps)},
            {"lost", r.lost}, {"duplicated", r.duplicated}, {"corrupt", r.corrupt},
            {"filtered", r.filtered}, {"aggregated", r.aggregated}, {"joined", r.joined},
            {"partitioned", r.partitioned}, {"replayed", r.replayed},
            {"deduplicated", r.deduplicated}, {"reconnects", r.reconnects}, {"rejected", r.rejected},
            {"restarts", restarts},
            {"latency_us", {{"p50", finite(r.latency_p50_us)}, {"p99", finite(r.latency_p99_us)},
                            {"max", finite(r.latency_max_us)}}},
            {"cpe_p_nodes", finite(r.cpe_p_nodes)}, {"cpe_s_nodes", finite(r.cpe_s_nodes)},
            {"cpe_p_endpoints", finite(r.cpe_p_endpoints)},
            {"cpe_s_endpoints", finite(r.cpe_s_endpoints)},
            {"endpoints_cpu_share", finite(r.endpoints_cpu_share)},
            {"processes", std::move(procs)}};
  // --prometheus: what the run's own Prometheus said of each process.
  if (!r.prometheus_url.empty()) {
    Json by = Json::object();
    for (const auto& [name, f] : r.prometheus)
      by[name] = {{"cpe_p", finite(f.cpe_p)}, {"cpe_s", finite(f.cpe_s)}, {"gbps", finite(f.gbps)},
                  {"seconds", finite(f.seconds)}, {"samples", f.samples}};
    j["prometheus_url"] = r.prometheus_url;
    j["prometheus"] = std::move(by);
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string report_table(const RunReport& r) {
  size_t w = 12;
  for (const auto& p : r.processes) w = std::max(w, p.name.size());
  std::string out = fmt::format("{:<{}} {:<8} {:>10} {:>10} {:>12} {:>7} {:>9} {:>9} {:>9} {:>9} "
                                "{:>7} {:>9} {:>8}\n",
                                "process", w, "role", "events in", "events out", "tuples/s", "Gb/s",
                                "CPE_p", "CPE_u", "CPE_s", "CPE_i", "CPB_p", "EPE (uJ)", "RSS MiB");
  for (const auto& p : r.processes) {
    if (!p.have_summary) {
      out += fmt::format("{:<{}} {:<8} {}\n", p.name, w, role_name(p.role),
                         !p.error.empty() ? p.error : p.settled.empty() ? "no summary" : p.settled);
      continue;
    }
    const ProcessSummary& s = p.summary;
    const double wall = s.wall_s > 0 ? s.wall_s : 0;
    const double tps = wall ? std::max(s.tuples_in, s.tuples_out) / wall : 0;
    const double gbps = wall ? std::max(s.bytes_in, s.bytes_out) * 8.0 / wall / 1e9 : 0;
    out += fmt::format("{:<{}} {:<8} {:>10} {:>10} {:>12.0f} {:>7.2f} {:>9.0f} {:>9.0f} {:>9.0f} "
                       "{:>9.0f} {:>7.2f} {:>9.2f} {:>8.1f}\n",
                       p.name, w, role_name(p.role), s.events_in, s.events_out, tps, gbps, s.cpe_p,
                       s.cpe_u, s.cpe_s, s.cpe_i, s.cpb_p, s.epe_joules * 1e6,
                       s.rss_max_bytes / 1048576.0);
  }
  out += fmt::format("pipeline: {} tuples, {:.0f} tuples/s, {:.2f} Gb/s, lost {}, duplicated {}, "
                     "corrupt {}, filtered {}{}{}{}, latency p50/p99/max {:.1f}/{:.1f}/{:.1f} us\n",
                     r.tuples, r.tuples_per_s, r.gbps, r.lost, r.duplicated, r.corrupt, r.filtered,
                     r.aggregated || r.joined
                         ? fmt::format(", aggregated {}, joined {}", r.aggregated, r.joined)
                         : "",
                     r.partitioned ? fmt::format(", partitioned {} (tuples a key split sent on, each "
                                                 "once)", r.partitioned)
                                   : "",
                     r.reconnects || r.replayed || r.deduplicated
                         ? fmt::format(", reconnects {}, replayed {} events, deduplicated {} tuples",
                                       r.reconnects, r.replayed, r.deduplicated)
                         : "",
                     r.latency_p50_us, r.latency_p99_us, r.latency_max_us);
  std::string restarted;
  for (const auto& p : r.processes) {
    if (!p.restarts) continue;
    std::string times;
    for (double t : p.recovery_s)
      times += fmt::format("{}{}", times.empty() ? "" : ", ",
                           t >= 0 ? fmt::format("recovered in {:.3f} s", t)
                                  : std::string("its recovery not seen at a sink"));
    restarted += fmt::format("{}{} {} time{} ({})", restarted.empty() ? "" : "; ",
                             p.name, p.restarts, p.restarts == 1 ? "" : "s",
                             times.empty() ? "?" : times);
  }
  if (!restarted.empty())
    out += fmt::format("restarts: {}; a recovery is from the death to the first tuple at the sink "
                       "after the restart\n", restarted);
  // A paced load generator that what is downstream held back: its rate was
  // not what the run measured.
  for (const auto& p : r.processes) {
    const ProcessSummary& s = p.summary;
    if (!p.have_summary || (s.held_back_s < 0.1 && !s.behind_events)) continue;
    out += fmt::format("{}: held back {:.1f} s, waiting for a free slot (credits or acknowledgements "
                       "from downstream){}\n",
                       p.name, s.held_back_s,
                       s.behind_events ? fmt::format("; made {} events fewer than its schedule called for",
                                                     s.behind_events)
                                       : "");
  }
  for (const auto& p : r.processes)
    if (p.have_summary && p.summary.rejected)
      out += fmt::format("{}: rejected {} records that did not decode (bad_records: reject; the first "
                         "are in its log)\n",
                         p.name, p.summary.rejected);
  for (const auto& p : r.processes)
    if (!p.settled.empty()) out += fmt::format("{}: {}\n", p.name, p.settled);
  if (r.cpe_p_nodes > 0 || r.cpe_p_endpoints > 0)
    out += fmt::format("cycles per event: nodes CPE_p {:.0f} (CPE_s {:.0f}), endpoints CPE_p {:.0f} "
                       "(CPE_s {:.0f}), {:.0f}% of the CPU time in the endpoints\n",
                       r.cpe_p_nodes, r.cpe_s_nodes, r.cpe_p_endpoints, r.cpe_s_endpoints,
                       100 * r.endpoints_cpu_share);
  for (const auto& p : r.processes) {
    const BurstSummary& b = p.summary.burst;
    if (!b.bursts) continue;
    out += fmt::format("bursts at {}: {}, processing p50/p99/max {:.1f}/{:.1f}/{:.1f} us; latency of "
                       "the first {} events p50/p99 {:.1f}/{:.1f} us, of the rest {:.1f}/{:.1f} us\n",
                       p.name, b.bursts, b.processing_p50_us, b.processing_p99_us, b.processing_max_us,
                       b.head_events, b.head_p50_us, b.head_p99_us, b.tail_p50_us, b.tail_p99_us);
  }
  for (const auto& p : r.processes)
    for (const auto& o : p.summary.operators)
      out += fmt::format("operator {}/{}: tuples in {}, out {}, cpu {:.3f} s ({:.1f} ns/tuple)\n",
                         p.name, o.name, o.tuples_in, o.tuples_out, o.cpu_s,
                         o.tuples_in ? o.cpu_s * 1e9 / o.tuples_in : 0.0);
  if (!r.prometheus_url.empty()) {
    out += fmt::format("prometheus ({}, samples in {}/prometheus/data):", r.prometheus_url, r.run_dir);
    for (const auto& [name, f] : r.prometheus)
      out += fmt::format(" {} CPE_p {:.0f} CPE_s {:.0f} {:.2f} Gb/s over {:.1f} s;", name, f.cpe_p,
                         f.cpe_s, f.gbps, f.seconds);
    if (r.prometheus.empty()) out += " recorded nothing";
    out += "\n";
  }
  // Where each process and stage ran: the CPUs it could use (last one used).
  for (const auto& p : r.processes) {
    if (!p.have_summary || p.summary.cpus.empty()) continue;
    std::string stages;
    for (const auto& st : p.summary.stages)
      stages += fmt::format("{}{} cpus {} (last {})", stages.empty() ? "" : ", ", st.name, st.cpus,
                            st.last_cpu);
    out += fmt::format("ran: {} on {}: cpus {} (last {}); {}\n", p.name,
                       p.where.empty() ? p.host : p.where, p.summary.cpus, p.summary.last_cpu, stages);
  }
  out += r.ok ? fmt::format("ok; logs and summaries in {}\n", r.run_dir)
              : fmt::format("FAILED: {}\nlogs and summaries in {}\n", r.error, r.run_dir);
  return out;
}

}  // namespace sluice
