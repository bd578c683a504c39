// What follows from the whole file once it is read: values no single key
// gives, filled in after every section is parsed (called from parse_root).
//
//   resolve_hosts    with `hosts:`, a process's `host` names a host; the
//                    process then runs there, is reached at and binds the
//                    host's address, and its pinned stage CPUs must be among
//                    the host's cores.
//   resolve_schemas  from the loadgens down, every process's schema in (what
//                    its upstreams send: a union of one schema) and out
//                    (after its operators, each checking its parameters
//                    against what flows into it); emitting operators get
//                    their derived stream's id, after every loadgen's.
//
// The layering of defaults and presets (defaults < top-level preset <
// top-level keys < link preset < link keys) happens while reading, in
// config_parse.cc; the presets' choices are in config_keys.cc.
#include <fmt/format.h>

#include <algorithm>

#include "graph/config_keys.h"
#include "graph/config_stages.h"
#include "graph/operator.h"
#include "transport/event.h"

namespace sluice::cfg {

// Every process's schemas in and out, from the loadgens down: a node's
// upstreams must send one schema (a union of one schema); each operator
// checks its fields against what flows into it and says what flows out.
// Emitting operators get their derived stream's id, after every loadgen's.
namespace {

// A loadgen with source: file: a file to read, one stream, a time field of
// its schema, one pace.
Status check_file_source(const Deployment& d, const ProcessConfig& p) {
  if (p.source != "file") return {};
  auto fail = [&](const std::string& msg) {
    return Status::Error(fmt::format("{}: process '{}' (source: file): {}", p.source_line, p.name, msg));
  };
  if (d.source_file.empty()) return fail("source_file names no file (--set source_file=PATH)");
  if (d.streams != 1)
    return fail(fmt::format("a file is one stream per instance, not streams: {}", d.streams));
  if (d.burst_events > 0) return fail("bursts are the generator's; pace a file by rate or source_time_field");
  if (!(d.source_speedup > 0)) return fail(fmt::format("source_speedup {} is not above 0", d.source_speedup));
  if (!d.source_time_field.empty()) {
    FieldRef f;
    if (!p.out_schema.find(d.source_time_field, &f) || f.type == FieldType::kBytes || d.source_time_field == "seq")
      return fail(fmt::format("source_time_field '{}' is no numeric field of schema {}", d.source_time_field,
                              p.out_schema.describe()));
    if (d.rate > 0) return fail("a time field and a rate both pace it: give one");
  }
  return {};
}

}  // namespace

Status resolve_schemas(Deployment* d, const Places& at) {
  auto& ps = d->processes;
  uint32_t next_stream = 0;
  for (const auto& p : ps)
    if (is_source(p.role)) next_stream += d->streams;
  const uint32_t tpe_bytes = d->event_bytes;
  std::vector<size_t> order = d->start_order();
  std::reverse(order.begin(), order.end());  // loadgens first
  for (size_t i : order) {
    ProcessConfig& p = ps[i];
    if (is_source(p.role)) {
      if (!p.schema.empty() && !d->find_schema(p.schema))
        return Status::Error(fmt::format("{}: process '{}': no schema '{}' in schemas:", p.source_line,
                                         p.name, p.schema));
      const SchemaConfig* sc = d->loadgen_schema(i);
      p.out_schema = sc ? sc->schema : Schema::default_for(d->tuple_bytes);
      if (!p.operators.empty())
        return Status::Error(fmt::format("{}: process '{}': operators run on nodes and sinks, not "
                                         "on a {}", p.source_line, p.name, role_name(p.role)));
      if (p.role == Role::kPublisher && p.source != "generator")
        return Status::Error(fmt::format("{}: process '{}': a publisher's tuples are its application's; "
                                         "source: {} is a loadgen's", p.source_line, p.name, p.source));
      if (!p.kafka_key.empty())
        return Status::Error(fmt::format("{}: process '{}': kafka_key keys the records a sink with "
                                         "kafka_topic writes; a {} has none",
                                         p.source_line, p.name, role_name(p.role)));
      if (p.source == "kafka" && p.kafka_topic.empty())
        return Status::Error(fmt::format("{}: process '{}': source: kafka reads kafka_topic; set it",
                                         p.source_line, p.name));
      if (p.source != "kafka" && !p.kafka_topic.empty())
        return Status::Error(fmt::format("{}: process '{}': kafka_topic is read with source: kafka; "
                                         "set it, or leave the topic out",
                                         p.source_line, p.name));
      if (p.source == "kafka" && d->kafka_bootstrap.empty())
        return Status::Error(fmt::format("{}: process '{}': source: kafka needs kafka_bootstrap "
                                         "(HOST:PORT of the broker; scripts/kafka.sh up prints it)",
                                         p.source_line, p.name));
      if (Status st = check_file_source(*d, p); !st) return st;
      continue;
    }
    if (p.source != "generator")
      return Status::Error(fmt::format("{}: process '{}': only a loadgen has a source ({}); a {} "
                                       "takes its upstream's tuples",
                                       p.source_line, p.name, p.source, role_name(p.role)));
    if (!p.kafka_topic.empty() && p.role != Role::kSink)
      return Status::Error(fmt::format("{}: process '{}': kafka_topic is the topic a loadgen with "
                                       "source: kafka reads or a sink writes; a node has none",
                                       p.source_line, p.name));
    if (!p.results.empty() && p.role != Role::kSink)
      return Status::Error(fmt::format("{}: process '{}': only a sink writes `results`",
                                       p.source_line, p.name));
    if (!p.kafka_topic.empty() && d->kafka_bootstrap.empty())
      return Status::Error(fmt::format("{}: process '{}': kafka_topic needs kafka_bootstrap (HOST:PORT "
                                       "of the broker; scripts/kafka.sh up prints it)",
                                       p.source_line, p.name));
    if (!p.schema.empty())
      return Status::Error(fmt::format("{}: process '{}': only a loadgen or a publisher names its "
                                       "schema; a {} takes its upstream's", p.source_line, p.name,
                                       role_name(p.role)));
    size_t first_in = SIZE_MAX;
    for (size_t l : d->inputs_of(i)) {
      const ProcessConfig& up = ps[d->links[l].from];
      if (first_in == SIZE_MAX) {
        first_in = d->links[l].from;
        p.in_schema = up.out_schema;
      } else if (!up.out_schema.same_layout(p.in_schema)) {
        return Status::Error(fmt::format(
            "{}: process '{}': a union of one schema only: '{}' sends {}, '{}' sends {}",
            p.source_line, p.name, ps[first_in].name, p.in_schema.describe(), up.name,
            up.out_schema.describe()));
      }
    }
    Schema cur = p.in_schema;
    for (size_t j = 0; j < p.operators.size(); ++j) {
      OperatorConfig& op = p.operators[j];
      const OperatorSpec* spec = find_operator_spec(op.kind);
      auto fail = [&](const std::string& msg) {
        return Status::Error(fmt::format("{}: process '{}', operator {} ({}): {}",
                                         op.source_line.empty() ? p.source_line : op.source_line,
                                         p.name, j, op.kind, msg));
      };
      for (size_t k = 0; k < spec->params.size(); ++k) {
        const auto& prm = spec->params[k];
        const std::string e = check_param(prm, op.get(prm.key), &cur);
        if (e.empty()) continue;
        const std::string line = k < op.param_lines.size() ? op.param_lines[k] : "";
        if (line.rfind("--set ", 0) == 0) return Status::Error(fmt::format("{}: {}", line, e));
        return Status::Error(fmt::format("{}: key '{}.{}': process '{}', operator {} ({}): {}",
                                         line.empty() ? op.source_line : line, op.path, prm.key,
                                         p.name, j, op.kind, e));
      }
      if (spec->emits) {
        if (next_stream >= kMaxStreams)
          return fail(fmt::format("its derived stream would be stream {}, beyond the {} a pipeline "
                                  "carries", next_stream, kMaxStreams));
        op.derived_stream = next_stream++;
      }
      Schema out;
      if (Status st = spec->output(op, cur, &out); !st) return fail(st.message());
      op.max_event_tuples = tuples_per_event(out.tuple_bytes(), tpe_bytes);
      cur = std::move(out);
    }
    p.out_schema = std::move(cur);
    // The results' columns: fields of what the sink writes.
    for (const std::string& f : p.results_fields) {
      FieldRef ref;
      if (!p.out_schema.find(f, &ref)) {
        std::string have;
        for (const auto& fs : p.out_schema.fields()) have += (have.empty() ? "" : ", ") + fs.name;
        return Status::Error(fmt::format("{}: process '{}': results_fields names '{}', no field of what "
                                         "it receives ({})",
                                         p.source_line, p.name, f, have));
      }
    }
    // The key of a sink's records: a field of what it writes.
    if (!p.kafka_key.empty()) {
      FieldRef ref;
      if (p.role != Role::kSink || p.kafka_topic.empty())
        return Status::Error(fmt::format("{}: process '{}': kafka_key keys the records a sink with "
                                         "kafka_topic writes; set kafka_topic, or leave the key out",
                                         p.source_line, p.name));
      if (!p.out_schema.find(p.kafka_key, &ref) || p.kafka_key == "seq" || ref.type == FieldType::kBytes) {
        std::string have;
        for (const auto& fs : p.out_schema.fields())
          if (fs.name != "seq" && fs.type != FieldType::kBytes) have += (have.empty() ? "" : ", ") + fs.name;
        return Status::Error(fmt::format("{}: process '{}': kafka_key names '{}', no field the sink writes "
                                         "({})",
                                         p.source_line, p.name, p.kafka_key, have));
      }
    }
  }
  (void)at;
  return {};
}

// With `hosts:`, each process's `host` (its own, else the top-level `host`)
// names one of them; the process then runs there and is reached at, and
// binds, the host's address.
Status resolve_hosts(Deployment* d, const Places& at, const std::vector<Places>& process_at) {
  std::vector<std::string> names;
  for (const auto& h : d->hosts) names.push_back(h.name);
  for (size_t i = 0; i < d->processes.size(); ++i) {
    ProcessConfig& p = d->processes[i];
    const bool own = process_at[i].of.count("host") > 0;
    auto fail = [&](const std::string& msg) {
      if (own) return process_at[i].error(fmt::format("processes.{}.host", i), "host", msg);
      if (at.of.count("host")) return at.error("host", msg);
      return Status::Error(fmt::format("{}: process '{}': {}", p.source_line, p.name, msg));
    };
    if (!own && !at.of.count("host"))
      return fail(fmt::format("names no host; with hosts:, every process names one ({})",
                              join(names)));
    const HostConfig* found = nullptr;
    for (const auto& h : d->hosts)
      if (h.name == p.host) found = &h;
    if (!found) {
      std::string hint = did_you_mean(p.host, names);
      for (const auto& h : d->hosts)
        if (h.address == p.host) hint = fmt::format(" (that is the address of '{}': name the host)", h.name);
      return fail(fmt::format("process '{}': no host '{}' in hosts: ({}){}", p.name, p.host,
                              join(names), hint));
    }
    p.host_name = found->name;
    p.host = found->address;
    // Stage CPUs must be CPUs the process may run on: its host's cores.
    if (!found->cpus.empty())
      for (unsigned c : p.stage_cpus)
        if (!std::binary_search(found->cpus.begin(), found->cpus.end(), c))
          return process_at[i].error(
              fmt::format("processes.{}.pin_stages", i), "pin_stages",
              fmt::format("process '{}': CPU {} is not one of its host '{}''s cores ({}), to "
                          "which the process is pinned",
                          p.name, c, found->name, cpu_list_name(found->cpus)));
  }
  return {};
}

}  // namespace sluice::cfg
