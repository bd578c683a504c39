// The deployment written back: dump_deployment() and describe_graph().
//
// dump_deployment writes every key resolved (what a run really used): the
// preset, every link key that applies to the top level's carrier, every
// top-level key in table order (config_keys.cc), the schemas, hosts, every
// process with its operators and their parameters (defaults filled in),
// and an explicit `links:` list, each link with every key its carrier reads.
// The dumped text parses to the same Deployment (graph_config_test checks
// this for every example), so `sluice-deploy validate` output is a file one
// can run, and a run directory records exactly what ran.
//
// describe_graph is the graph in words for `sluice-deploy validate`: one line
// per link, one per process that unions or splits, one per operator chain.
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include "graph/config.h"
#include "graph/config_keys.h"
#include "transport/handshake.h"

namespace sluice {

using namespace cfg;

std::string dump_deployment(const Deployment& d) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "preset" << YAML::Value << d.preset;
  for (const auto& key : link_keys())
    if (key_applies(key.only, d.link.transport)) key.write(e, d.link);
  for (const auto& key : keys()) key.write(e, d);
  if (!d.schemas.empty()) {
    e << YAML::Key << "schemas" << YAML::Value << YAML::BeginMap;
    for (const auto& sc : d.schemas) {
      e << YAML::Key << sc.schema.name() << YAML::Value << YAML::BeginMap;
      e << YAML::Key << "tuple_bytes" << YAML::Value << sc.schema.tuple_bytes();
      e << YAML::Key << "fields" << YAML::Value << YAML::BeginSeq;
      for (size_t i = 1; i < sc.schema.fields().size(); ++i) {
        const FieldSpec& f = sc.schema.fields()[i];
        const FieldGen& g = sc.gens[i - 1];
        e << YAML::Flow << YAML::BeginMap;
        e << YAML::Key << "name" << YAML::Value << f.name;
        e << YAML::Key << "type" << YAML::Value << field_type_name(f.type);
        if (f.type == FieldType::kBytes) e << YAML::Key << "width" << YAML::Value << f.width;
        e << YAML::Key << "gen" << YAML::Value << YAML::BeginMap;
        if (g.kind == FieldGen::Kind::kUniform || g.kind == FieldGen::Kind::kZipf)
          e << YAML::Key << field_gen_name(g.kind) << YAML::Value << g.cardinality;
        else if (g.kind == FieldGen::Kind::kRandom)
          e << YAML::Key << "random" << YAML::Value << YAML::Null;
        else
          e << YAML::Key << field_gen_name(g.kind) << YAML::Value << g.value;
        if (g.kind == FieldGen::Kind::kZipf) e << YAML::Key << "s" << YAML::Value << fmt_double(g.s);
        e << YAML::EndMap << YAML::EndMap;
      }
      e << YAML::EndSeq << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  if (!d.hosts.empty()) {
    e << YAML::Key << "hosts" << YAML::Value << YAML::BeginSeq;
    for (const auto& h : d.hosts) {
      e << YAML::Flow << YAML::BeginMap;
      e << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << h.name;
      e << YAML::Key << "address" << YAML::Value << YAML::DoubleQuoted << h.address;
      if (!h.cpus.empty())
        e << YAML::Key << "cores" << YAML::Value << YAML::DoubleQuoted << cpu_list_name(h.cpus);
      e << YAML::Key << "rate" << YAML::Value << rate_name(h.rate_bps);
      e << YAML::Key << "ssh_user" << YAML::Value << YAML::DoubleQuoted << h.ssh_user;
      e << YAML::Key << "ssh_port" << YAML::Value << h.ssh_port;
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::Key << "processes" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : d.processes) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << p.name;
    e << YAML::Key << "role" << YAML::Value << role_name(p.role);
    e << YAML::Key << "host" << YAML::Value << YAML::DoubleQuoted
      << (p.host_name.empty() ? p.host : p.host_name);
    e << YAML::Key << "listen" << YAML::Value << YAML::DoubleQuoted << p.listen;
    e << YAML::Key << "port" << YAML::Value << p.port;
    e << YAML::Key << "cores" << YAML::Value << fmt_double(p.cores);
    e << YAML::Key << "split" << YAML::Value << split_name(p.split);
    if (!p.split_key.empty()) e << YAML::Key << "split_key" << YAML::Value << p.split_key;
    if (!p.stage_cpus.empty())
      e << YAML::Key << "pin_stages" << YAML::Value << YAML::DoubleQuoted << cpu_list_name(p.stage_cpus);
    else
      e << YAML::Key << "pin_stages" << YAML::Value << (p.pin_stages ? "on" : "off");
    if (!p.schema.empty()) e << YAML::Key << "schema" << YAML::Value << YAML::DoubleQuoted << p.schema;
    if (!p.results.empty()) {
      e << YAML::Key << "results" << YAML::Value << YAML::DoubleQuoted << p.results;
      e << YAML::Key << "results_format" << YAML::Value << p.results_format;
      if (!p.results_fields.empty()) {
        e << YAML::Key << "results_fields" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (const auto& f : p.results_fields) e << f;
        e << YAML::EndSeq;
      }
    }
    if (p.source != "generator") e << YAML::Key << "source" << YAML::Value << p.source;
    if (!p.kafka_topic.empty())
      e << YAML::Key << "kafka_topic" << YAML::Value << YAML::DoubleQuoted << p.kafka_topic;
    if (!p.kafka_key.empty()) e << YAML::Key << "kafka_key" << YAML::Value << p.kafka_key;
    if (p.record_format != "csv") e << YAML::Key << "record_format" << YAML::Value << p.record_format;
    if (!p.restart.empty()) e << YAML::Key << "restart" << YAML::Value << p.restart;
    if (!p.threads.empty()) e << YAML::Key << "threads" << YAML::Value << p.threads;
    // Expanded: written as one process each, never expanded again.
    if (p.parallelism) e << YAML::Key << "parallelism" << YAML::Value << p.parallelism;
    e << YAML::Key << "operators" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& op : p.operators) {
      e << YAML::BeginMap << YAML::Key << op.kind << YAML::Value << YAML::BeginMap;
      for (const auto& [k, v] : op.params) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
  for (const auto& l : d.links) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "from" << YAML::Value << YAML::DoubleQuoted << d.processes[l.from].name;
    e << YAML::Key << "to" << YAML::Value << YAML::DoubleQuoted << d.processes[l.to].name;
    e << YAML::Key << "port" << YAML::Value << l.port;
    // Its keys below all beat it; written so the parsed LinkConfig is the same.
    if (!l.preset.empty()) e << YAML::Key << "preset" << YAML::Value << l.preset;
    for (const auto& key : link_keys())
      if (key_applies(key.only, l.options.transport)) key.write(e, l.options);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

std::string describe_graph(const Deployment& d) {
  std::string out = fmt::format("# graph: {} processes, {} links{}{}\n", d.processes.size(),
                                d.links.size(), d.chain ? " (a chain, in the order listed)" : "",
                                d.instances > 1 ? fmt::format(", {} instances of it", d.instances) : "");
  for (size_t l = 0; l < d.links.size(); ++l) {
    const LinkOptions o = d.link_options(l, 0);
    out += fmt::format("#   link {}: {} -> {}  {}  {}:{}\n", l, o.from, o.to,
                       carrier_name(o),
                       o.host, o.port);
  }
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const size_t in = d.inputs_of(i).size(), out_n = d.outputs_of(i).size();
    if (in < 2 && out_n < 2) continue;
    std::string what;
    if (in > 1) what = fmt::format("union of {} upstreams", in);
    if (out_n > 1)
      what += fmt::format("{}{} to {} downstreams", what.empty() ? "" : "; ",
                          d.processes[i].split == Split::kCopy  ? std::string("copy")
                          : d.processes[i].split == Split::kKey ? "split by key " + d.processes[i].split_key
                                                                : std::string("split by stream"),
                          out_n);
    out += fmt::format("#   {}: {}\n", d.processes[i].name, what);
  }
  for (const auto& p : d.processes) {
    if (p.operators.empty()) continue;
    std::string chain;
    for (const auto& op : p.operators) chain += (chain.empty() ? "" : " -> ") + op.kind;
    out += fmt::format("#   {} runs: {}\n", p.name, chain);
  }
  return out;
}

}  // namespace sluice
