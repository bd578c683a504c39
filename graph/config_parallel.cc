// `parallelism`: one process of the file run as several, and where their
// threads run (`pin: spread`). Called by parse_root once the processes and
// links are read, before anything else looks at the graph, so that every
// later stage (ports, slots, schemas, derived streams, validation) and every
// program sees only plain processes and links.
//
//   1. Process NAME with parallelism N > 1 becomes NAME.0 .. NAME.N-1, in its
//      place in the list, each a copy of it with parallelism 1. A load
//      generator's replicas each make their own `streams` streams (numbered
//      after the ones before them, as separate load generators are) and, with
//      `tuples`, that many tuples each.
//   2. A link A -> B becomes links between their replicas: A.i -> B.i for
//      each i where both have as many and A does not split by key (each
//      replica a path of its own, its streams whole); else A.i -> B.j for
//      every pair, A's `split` dividing each A.i's events over B's replicas
//      (by key: every tuple of one key reaches the same B.j).
//   3. A stateful operator is exact over replicas only if each replica gets
//      all of what its state is kept for: a groupby's group_by key (or, with
//      per_stream windows, its streams whole), a correlate's txn. The
//      upstreams must split by that key; a moving_avg, over every tuple in
//      order, runs once.
//   4. pin: spread gives each process that pins nothing itself its stage
//      threads' CPUs: three per instance, the next ones of its host's cores
//      (or of this machine's) after those of the processes listed before it.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "graph/config_stages.h"

namespace sluice::cfg {
namespace {

uint32_t parallelism_of(const Deployment& d, const ProcessConfig& p) {
  if (p.parallelism) return p.parallelism;
  return p.role == Role::kSink ? 1 : d.parallelism;
}

// The operator of process `p` whose state needs its input split by a key,
// and that key: "" when none (or its windows are per stream and the input
// keeps each stream whole). false in *ok: it cannot run as replicas at all.
std::string key_needed(const ProcessConfig& p, std::string* op_kind, bool* per_stream, bool* ok) {
  *ok = true;
  *per_stream = false;
  for (const OperatorConfig& op : p.operators) {
    *op_kind = op.kind;
    if (op.kind == "moving_avg") {
      *ok = false;
      return "";
    }
    if (op.kind == "correlate") return op.get("txn");
    if (op.kind == "groupby") {
      *per_stream = op.get("per_stream") == "on";
      return op.get("group_by");
    }
  }
  return "";
}

Status check_replicable(const Deployment& d, size_t i, uint32_t n, const Places& at) {
  const ProcessConfig& p = d.processes[i];
  const std::string path = fmt::format("processes.{}", i);
  if (n > 1 && p.port)
    return at.error(path + ".port", "port",
                    fmt::format("process '{}': its {} replicas each listen on ports of their own; "
                                "leave port out (base_port + 100 * the replica's place)",
                                p.name, n));
  if (n > 1 && !p.results.empty() && p.results.find("{replica}") == std::string::npos)
    return at.error(path + ".results", "results",
                    fmt::format("process '{}': {} replicas would write one file; put {{replica}} "
                                "in its name", p.name, n));
  std::string kind;
  bool per_stream = false, ok = true;
  const std::string key = key_needed(p, &kind, &per_stream, &ok);
  if (n > 1 && !ok)
    return at.error(path + ".parallelism", "parallelism",
                    fmt::format("process '{}': its {} averages every tuple in order and runs as one "
                                "process; give it parallelism: 1",
                                p.name, kind));
  if (n <= 1 || (key.empty() && !per_stream && kind != "groupby")) return {};
  // Each upstream must send every tuple of one key (or, per stream, of one
  // stream) to one replica.
  for (size_t l : d.inputs_of(i)) {
    const ProcessConfig& up = d.processes[d.links[l].from];
    const bool by_key = up.split == Split::kKey && !key.empty() && up.split_key == key;
    const bool by_stream = per_stream && up.split == Split::kStream;
    if (by_key || by_stream) continue;
    return at.error(path + ".parallelism", "parallelism",
                    fmt::format("process '{}' runs its {} as {} replicas, so each must get all of "
                                "{}: its upstream '{}' must split: key with split_key: {}{}",
                                p.name, kind, n,
                                key.empty() ? "its tuples" : "a key's tuples", up.name,
                                key.empty() ? "(a group_by field)" : key,
                                per_stream ? " (or split: stream, each stream whole)" : ""));
  }
  return {};
}

}  // namespace

Status expand_parallelism(Deployment* d, const Places& at, std::vector<Places>* process_at,
                          std::vector<Places>* link_at) {
  if (d->parallelism == 0) return at.error("parallelism", "must be at least 1");
  const size_t n = d->processes.size();
  std::vector<uint32_t> par(n);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    par[i] = parallelism_of(*d, d->processes[i]);
    any = any || par[i] > 1;
    if (Status st = check_replicable(*d, i, par[i], (*process_at)[i]); !st) return st;
  }
  if (any) {
    std::vector<ProcessConfig> ps;
    std::vector<Places> ps_at;
    std::vector<size_t> first(n);
    for (size_t i = 0; i < n; ++i) {
      first[i] = ps.size();
      for (uint32_t r = 0; r < par[i]; ++r) {
        ProcessConfig p = d->processes[i];
        p.parallelism = 1;
        if (par[i] > 1) {
          p.name = fmt::format("{}.{}", p.name, r);
          if (auto pos = p.results.find("{replica}"); pos != std::string::npos)
            p.results.replace(pos, 9, std::to_string(r));
        }
        ps.push_back(std::move(p));
        ps_at.push_back((*process_at)[i]);
      }
    }
    for (size_t a = 0; a < ps.size(); ++a)
      for (size_t b = a + 1; b < ps.size(); ++b)
        if (ps[a].name == ps[b].name)
          return Status::Error(fmt::format("{}: process '{}' is also the name of a replica of a process "
                                           "with parallelism (at {})",
                                           ps[a].source_line, ps[a].name, ps[b].source_line));
    std::vector<LinkConfig> ls;
    std::vector<Places> ls_at;
    for (size_t l = 0; l < d->links.size(); ++l) {
      const LinkConfig& lc = d->links[l];
      const uint32_t pa = par[lc.from], pb = par[lc.to];
      if ((pa > 1 || pb > 1) && lc.port)
        return (*link_at)[l].error(fmt::format("links.{}.port", l), "port",
                                   fmt::format("{}: a link between processes with parallelism has "
                                               "ports of its own per replica; leave port out",
                                               link_name(*d, l)));
      const bool pointwise = pa == pb && d->processes[lc.from].split != Split::kKey;
      for (uint32_t i = 0; i < pa; ++i)
        for (uint32_t j = 0; j < pb; ++j) {
          if (pointwise && i != j) continue;
          LinkConfig c = lc;
          c.from = first[lc.from] + i;
          c.to = first[lc.to] + j;
          ls.push_back(std::move(c));
          ls_at.push_back((*link_at)[l]);
        }
    }
    d->processes = std::move(ps);
    d->links = std::move(ls);
    *process_at = std::move(ps_at);
    *link_at = std::move(ls_at);
    d->chain = false;  // replicas make no chain
  } else {
    for (auto& p : d->processes) p.parallelism = p.parallelism ? 1 : 0;
  }

  if (d->pin != "spread") return {};
  // Per host (its name, else its address), the next CPU to give.
  std::vector<std::pair<std::string, size_t>> next;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  for (ProcessConfig& p : d->processes) {
    if (p.pin_stages) continue;  // its own choice
    const std::string host = p.host_name.empty() ? p.host : p.host_name;
    std::vector<unsigned> cpus;
    for (const auto& h : d->hosts)
      if (h.name == p.host_name) cpus = h.cpus;
    if (cpus.empty())
      for (unsigned c = 0; c < hw; ++c) cpus.push_back(c);
    size_t* at_cpu = nullptr;
    for (auto& [h, k] : next)
      if (h == host) at_cpu = &k;
    if (!at_cpu) at_cpu = &next.emplace_back(host, 0).second;
    // Stage t runs on stage_cpus[t mod size] (runtime/process.cc): a list
    // of distinct CPUs, sorted as the file writes it back (resolved.yaml).
    const size_t stages = size_t{3} * d->instances;
    p.pin_stages = true;
    p.stage_cpus.clear();
    for (size_t t = 0; t < std::min(stages, cpus.size()); ++t)
      p.stage_cpus.push_back(cpus[(*at_cpu + t) % cpus.size()]);
    std::sort(p.stage_cpus.begin(), p.stage_cpus.end());
    *at_cpu += stages;
  }
  return {};
}

}  // namespace sluice::cfg
