// The deployment parser: how a file becomes a Deployment.
//   1. YAML::Load the text (a syntax error names file:line; an unclosed `[`
//      or `{` names the line that opened it: config_reader.cc).
//   2. Apply each `--set key=value` to the YAML tree, so an override is checked
//      by exactly the same code as the file; the nodes it put there remember
//      the override, and an error on them names "--set key=value".
//   3. Read the top-level keys through the key tables (config_keys.cc):
//      `preset` first (it resets the link choices), then `host`, then every
//      other key (explicit keys beat the preset), then `schemas`, `hosts`,
//      `processes` and `links`. A link starts from the top level's link keys,
//      then its own preset's choices, then its own keys:
//        defaults < top-level preset < top-level keys < link preset < link keys
//   4. Resolve and check what only makes sense across keys (config_stages.h:
//      hosts, the graph, slots and ports, schemas, key splits).
// dump_deployment() (config_write.cc) writes the same tables back, so dumped
// text parses to the identical Deployment.
//
// This file reads the sections by hand (a process, an operator and its
// parameters from graph/operator.h, a schema and its fields' generators, a
// host, a link); every value goes through the Reader, so every error names
// where it was given.
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "graph/config.h"
#include "graph/config_keys.h"
#include "graph/config_reader.h"
#include "graph/config_stages.h"
#include "graph/operator.h"

namespace sluice {
namespace cfg {
namespace {

// ---------------------------------------------------------------- processes

// One operator: a map with one key naming its kind, whose keys are the
// parameters its OperatorSpec declares (graph/operator.h): checked here for
// names and types, defaults filled in; fields are checked against the
// schema once the graph's schemas are resolved.
Status parse_operator(const Reader& r, const YAML::Node& n, const std::string& path,
                      OperatorConfig* op) {
  if (!n.IsMap() || n.size() != 1)
    return r.error(n, path,
                   fmt::format("an operator is a map with exactly one key naming its kind ({})",
                               join(kOperatorKinds)));
  // `aggregate` was a second, plainer group-by beside `groupby`; one remains.
  if (n.IsMap() && n.begin()->first.IsScalar() && n.begin()->first.Scalar() == "aggregate")
    return r.error(n.begin()->first, path + ".aggregate",
                   "'aggregate' is now 'groupby' (one group-by operator): write {groupby: "
                   "{group_by: FIELD, aggregates: \"count, sum(FIELD)\", window: count, size: N, "
                   "max_groups: G}} for aggregate's {group_by, sum, window: N, groups: G}");
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kOperatorKinds, &kv); !st) return st;
  op->kind = kv[0].first.Scalar();
  op->source_line = r.where(kv[0].first);
  op->path = path + "." + op->kind;
  const OperatorSpec* spec = find_operator_spec(op->kind);
  const YAML::Node& body = kv[0].second;
  const std::string bpath = path + "." + op->kind;
  std::vector<std::string> known;
  for (const auto& p : spec->params) known.push_back(p.key);
  std::vector<std::pair<YAML::Node, YAML::Node>> fields;
  if (!body.IsNull()) {
    if (!body.IsMap())
      return r.error(body, bpath, fmt::format("expected a map, got {}", node_kind(body)));
    if (Status st = r.keys_of(body, bpath, known, &fields); !st) return st;
  }
  op->params.clear();
  for (const auto& p : spec->params) {
    const YAML::Node* given = nullptr;
    for (auto& [k, v] : fields)
      if (k.Scalar() == p.key) given = &v;
    const std::string kpath = bpath + "." + p.key;
    std::string text;
    if (!given) {
      if (!p.def)
        return r.error(n, "", fmt::format("{}: operator '{}' needs '{}' ({}: {})", path, op->kind,
                                          p.key, param_type_name(p.type), p.doc));
      text = p.def;
    } else if (given->IsSequence() && p.type == ParamType::kFieldList) {
      for (auto e : *given) text += (text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
    } else if (given->IsScalar()) {
      text = given->Scalar();
    } else {
      return r.error(*given, kpath,
                     fmt::format("expected {}, got {}", param_type_name(p.type), node_kind(*given)));
    }
    if (given)
      if (std::string e = check_param(p, text, nullptr); !e.empty())
        return r.error(*given, kpath, e);
    op->params.emplace_back(p.key, text);
    op->param_lines.push_back(given ? r.where(*given) : std::string());
  }
  return {};
}

// One field of a schema: name, type, width (bytes), gen.
Status parse_field(const Reader& r, const YAML::Node& n, const std::string& path, FieldSpec* f,
                   FieldGen* g) {
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kFieldKeys, &kv); !st) return st;
  bool have_name = false, have_type = false, have_gen = false;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "name") {
      have_name = true;
      st = r.get_string(v, kpath, false, &f->name);
    } else if (key == "type") {
      have_type = true;
      std::string t;
      st = r.get_enum(v, kpath, {"i32", "i64", "u32", "u64", "f64", "timestamp", "bytes"}, &t);
      if (st) parse_field_type(t, &f->type);
    } else if (key == "width") {
      st = r.get(v, kpath, &f->width);
    } else if (key == "gen") {
      have_gen = true;
      // `gen: sequence` | `gen: random` | `gen: {uniform: N}` | `gen: {zipf: N, s: 1.2}` |
      // `gen: {constant: V}` | `gen: {sequence: OFFSET}`
      std::string kind;
      YAML::Node arg;
      if (v.IsScalar()) {
        kind = v.Scalar();
      } else if (v.IsMap()) {
        for (auto e : v) {
          const std::string ek = e.first.IsScalar() ? e.first.Scalar() : "";
          if (ek == "s") {
            st = r.get_double(e.second, kpath + ".s", &g->s);
          } else if (kind.empty()) {
            kind = ek;
            arg = e.second;
          } else {
            st = r.error(e.first, kpath, "a generator is one of its kinds (and `s` for zipf)");
          }
          if (!st) return st;
        }
      }
      if (std::find(kGenKinds.begin(), kGenKinds.end(), kind) == kGenKinds.end())
        return r.error(v, kpath, fmt::format("expected a generator ({}), got '{}'{}", join(kGenKinds),
                                             kind, did_you_mean(kind, kGenKinds)));
      g->kind = kind == "sequence"  ? FieldGen::Kind::kSequence
                : kind == "uniform" ? FieldGen::Kind::kUniform
                : kind == "zipf"    ? FieldGen::Kind::kZipf
                : kind == "constant" ? FieldGen::Kind::kConstant
                                     : FieldGen::Kind::kRandom;
      const bool needs_card = g->kind == FieldGen::Kind::kUniform || g->kind == FieldGen::Kind::kZipf;
      if (needs_card) {
        if (!arg.IsDefined() || arg.IsNull())
          return r.error(v, kpath, fmt::format("{} needs a cardinality: {{{}: N}}", kind, kind));
        st = r.get(arg, kpath + "." + kind, &g->cardinality);
        if (st && g->cardinality == 0) st = r.error(arg, kpath + "." + kind, "must be at least 1");
        if (st && g->kind == FieldGen::Kind::kZipf && g->cardinality > (1u << 24))
          st = r.error(arg, kpath + ".zipf", "at most 16777216 (its table is made once)");
      } else if (arg.IsDefined() && !arg.IsNull()) {
        if (!arg.IsScalar()) return r.error(arg, kpath, "expected a number");
        char* end = nullptr;
        g->value = std::strtoll(arg.Scalar().c_str(), &end, 0);
        if (arg.Scalar().empty() || *end) st = r.error(arg, kpath, fmt::format("expected an integer, got '{}'", arg.Scalar()));
      }
    }
    if (!st) return st;
  }
  if (!have_name || !have_type)
    return r.error(n, "", fmt::format("{}: missing required key '{}'", path, have_name ? "type" : "name"));
  if (!have_gen) g->kind = f->type == FieldType::kBytes ? FieldGen::Kind::kRandom : FieldGen::Kind::kSequence;
  return {};
}

Status parse_schemas(const Reader& r, const YAML::Node& n, Deployment* d) {
  if (n.IsNull()) return {};
  if (!n.IsMap())
    return r.error(n, "schemas", fmt::format("expected a map of name -> {{fields: [...]}}, got {}",
                                             node_kind(n)));
  for (auto kv : n) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const std::string path = "schemas." + name;
    const YAML::Node& body = kv.second;
    if (!body.IsMap()) return r.error(body, path, fmt::format("expected a map, got {}", node_kind(body)));
    std::vector<std::pair<YAML::Node, YAML::Node>> keys;
    if (Status st = r.keys_of(body, path, kSchemaKeys, &keys); !st) return st;
    SchemaConfig sc;
    sc.source_line = r.where(kv.first);
    std::vector<FieldSpec> fields;
    uint32_t tuple_bytes = 0;
    bool have_fields = false;
    for (auto& [k, v] : keys) {
      const std::string kpath = path + "." + k.Scalar();
      if (k.Scalar() == "tuple_bytes") {
        if (Status st = r.get(v, kpath, &tuple_bytes); !st) return st;
      } else {
        have_fields = true;
        if (!v.IsSequence() || v.size() == 0)
          return r.error(v, kpath, "expected a list of fields ({name, type, width, gen})");
        for (size_t i = 0; i < v.size(); ++i) {
          FieldSpec f;
          FieldGen g;
          if (Status st = parse_field(r, v[i], fmt::format("{}.{}", kpath, i), &f, &g); !st) return st;
          fields.push_back(f);
          sc.gens.push_back(g);
        }
      }
    }
    if (!have_fields) return r.error(kv.first, "", fmt::format("{}: missing required key 'fields'", path));
    if (name == "default" || name == "sluice.tuple")
      return r.error(kv.first, "", fmt::format("{}: '{}' is the default schema's name", path, name));
    if (Status st = Schema::make(name, std::move(fields), tuple_bytes, &sc.schema); !st)
      return r.error(kv.first, path, st.message());
    if (d->find_schema(name))
      return r.error(kv.first, path, fmt::format("schema '{}' declared twice", name));
    d->schemas.push_back(std::move(sc));
  }
  return {};
}

// A process's or a host's name becomes a file or namespace name: letters,
// digits, '.', '_' and '-' only.
static Status check_name(const Reader& r, const YAML::Node& v, const std::string& kpath,
                         const std::string& name, const char* what, const char* names) {
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789._-") == std::string::npos)
    return {};
  return r.error(v, kpath,
                 fmt::format("'{}': a {} name may hold only letters, digits, '.', '_' and '-' "
                             "(it names {})",
                             name, what, names));
}

// `at`: where the process and each key it sets were given (a clash of
// ports names the line of `port`, not the process's).
Status parse_process(const Reader& r, const YAML::Node& n, size_t i, const std::string& default_host,
                     ProcessConfig* p, Places* at) {
  const std::string path = fmt::format("processes.{}", i);
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  p->source_line = r.where(n);
  p->host = default_host;
  at->root = p->source_line;
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kProcessKeys, &kv); !st) return st;
  bool have_name = false, have_role = false;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    at->of[key] = r.key_at(k, v);
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "name") {
      have_name = true;
      st = r.get_string(v, kpath, false, &p->name);
      if (st)
        st = check_name(r, v, kpath, p->name, "process", "the process's log and summary files");
    } else if (key == "role") {
      have_role = true;
      std::string role;
      st = r.get_enum(v, kpath, kRoles, &role);
      p->role = role == "loadgen"      ? Role::kLoadgen
                : role == "sink"       ? Role::kSink
                : role == "publisher"  ? Role::kPublisher
                : role == "subscriber" ? Role::kSubscriber
                                       : Role::kNode;
    } else if (key == "host") {
      st = r.get_string(v, kpath, false, &p->host);
    } else if (key == "listen") {
      st = r.get_string(v, kpath, true, &p->listen);
    } else if (key == "split") {
      std::string sp;
      st = r.get_enum(v, kpath, kSplits, &sp);
      p->split = sp == "copy" ? Split::kCopy : sp == "key" ? Split::kKey : Split::kStream;
    } else if (key == "split_key") {
      st = r.get_string(v, kpath, false, &p->split_key);
    } else if (key == "port") {
      st = r.get(v, kpath, &p->port);
    } else if (key == "cores") {
      st = r.get_double(v, kpath, &p->cores);
    } else if (key == "pin_stages") {
      // off | on | a CPU list like a host's `cores` (0-3, "0,2", [0, 1]).
      std::string text;
      if (v.IsSequence()) {
        for (auto e : v) text += (text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
      } else if (v.IsScalar()) {
        text = v.Scalar();
      }
      p->stage_cpus.clear();
      if (text == "off" || text == "false" || text == "no") {
        p->pin_stages = false;
      } else if (text == "on" || text == "true" || text == "yes") {
        p->pin_stages = true;
      } else if (parse_cpu_list(text, &p->stage_cpus)) {
        p->pin_stages = true;
      } else {
        st = r.error(v, kpath,
                     fmt::format("expected off, on (spread the stage threads over the host's "
                                 "cores) or the CPUs to pin them to in turn (0-3, \"0,2\", [0, 1]); "
                                 "got {}",
                                 v.IsScalar() || v.IsSequence() ? "'" + text + "'" : node_kind(v)));
      }
    } else if (key == "schema") {
      st = r.get_string(v, kpath, false, &p->schema);
    } else if (key == "results") {
      st = r.get_string(v, kpath, true, &p->results);
    } else if (key == "source") {
      st = r.get_enum(v, kpath, kSources, &p->source);
    } else if (key == "kafka_topic") {
      st = r.get_string(v, kpath, false, &p->kafka_topic);
    } else if (key == "kafka_key") {
      st = r.get_string(v, kpath, false, &p->kafka_key);
    } else if (key == "record_format") {
      st = r.get_enum(v, kpath, kRecordFormats, &p->record_format);
    } else if (key == "results_format") {
      st = r.get_enum(v, kpath, kRecordFormats, &p->results_format);
    } else if (key == "results_fields") {
      // A list, or its items in one string ("a,b", as --set gives it).
      p->results_fields.clear();
      if (v.IsSequence()) {
        for (auto e : v) {
          if (!e.IsScalar()) {
            st = r.error(e, kpath, fmt::format("expected a field's name, got {}", node_kind(e)));
            break;
          }
          p->results_fields.push_back(e.Scalar());
        }
      } else if (v.IsScalar()) {
        std::string text = v.Scalar();
        if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
        size_t b = 0;
        while (b <= text.size() && !text.empty()) {
          size_t e = text.find(',', b);
          if (e == std::string::npos) e = text.size();
          std::string name = text.substr(b, e - b);
          while (!name.empty() && name.front() == ' ') name.erase(0, 1);
          while (!name.empty() && name.back() == ' ') name.pop_back();
          if (name.empty()) {
            st = r.error(v, kpath, fmt::format("an empty field name in '{}'", v.Scalar()));
            break;
          }
          p->results_fields.push_back(name);
          b = e + 1;
        }
      } else {
        st = r.error(v, kpath, fmt::format("expected a list of field names, got {}", node_kind(v)));
      }
    } else if (key == "restart") {
      st = r.get_enum(v, kpath, kRestarts, &p->restart);
    } else if (key == "threads") {
      st = r.get_enum(v, kpath, kThreads, &p->threads);
    } else if (key == "parallelism") {
      st = r.get(v, kpath, &p->parallelism);
      if (st && p->parallelism == 0) st = r.error(v, kpath, "must be at least 1");
    } else if (key == "operators") {
      if (v.IsNull()) continue;
      if (!v.IsSequence()) {
        st = r.error(v, kpath, fmt::format("expected a list of operators, got {}", node_kind(v)));
      } else {
        for (size_t j = 0; j < v.size() && st; ++j) {
          OperatorConfig op;
          st = parse_operator(r, v[j], fmt::format("{}.{}", kpath, j), &op);
          p->operators.push_back(op);
        }
      }
    }
    if (!st) return st;
  }
  if (!have_name) return r.error(n, "", fmt::format("{}: missing required key 'name'", path));
  if (!have_role)
    return r.error(n, "", fmt::format("{} ('{}'): missing required key 'role' ({})", path, p->name,
                                      join(kRoles)));
  return {};
}

// ---------------------------------------------------------------- hosts

// One host of `hosts:`. Its rate defaults to `host_rate` (read before it).
Status parse_host(const Reader& r, const YAML::Node& n, size_t i, uint64_t default_rate,
                  HostConfig* h, Places* at) {
  const std::string path = fmt::format("hosts.{}", i);
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  h->source_line = r.where(n);
  h->rate_bps = default_rate;
  at->root = h->source_line;
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kHostKeys, &kv); !st) return st;
  bool have_name = false, have_address = false;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    at->of[key] = r.key_at(k, v);
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "name") {
      have_name = true;
      st = r.get_string(v, kpath, false, &h->name);
      if (st) st = check_name(r, v, kpath, h->name, "host", "the host's network namespace");
    } else if (key == "address") {
      have_address = true;
      st = r.get_string(v, kpath, false, &h->address);
    } else if (key == "cores") {
      // `cores: 0-3`, `cores: "0,2"` or `cores: [0, 1, 4-5]`: CPUs, not a count.
      std::string text;
      if (v.IsSequence()) {
        for (auto e : v) text += (text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
      } else if (v.IsScalar()) {
        text = v.Scalar();
      }
      if (!parse_cpu_list(text, &h->cpus))
        st = r.error(v, kpath,
                     fmt::format("expected the CPUs to pin to, as a list or ranges (0-3, "
                                 "\"0,2\", [0, 1]), each below 1024 and given once; got {}",
                                 v.IsScalar() || v.IsSequence() ? "'" + text + "'" : node_kind(v)));
    } else if (key == "rate") {
      st = r.get_rate(v, kpath, &h->rate_bps);
    } else if (key == "ssh_user") {
      st = r.get_string(v, kpath, true, &h->ssh_user);
    } else if (key == "ssh_port") {
      st = r.get(v, kpath, &h->ssh_port);
    }
    if (!st) return st;
  }
  if (!have_name) return r.error(n, "", fmt::format("{}: missing required key 'name'", path));
  if (!have_address)
    return r.error(n, "", fmt::format("{} ('{}'): missing required key 'address' (where its "
                                      "processes are reached)",
                                      path, h->name));
  return {};
}

// ---------------------------------------------------------------- links

// One link of `links:`: from, to, port, its preset, and any link key. Its
// options start from the top level's (`base`), then its preset's choices,
// then its own keys.
Status parse_link(const Reader& r, const YAML::Node& n, size_t i, const Deployment& d,
                  const std::string& chain_at, LinkConfig* l, Places* at) {
  const std::string path = fmt::format("links.{}", i);
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  l->source_line = chain_at.empty() ? r.where(n) : chain_at;
  at->root = l->source_line;
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, link_entry_keys(), &kv); !st) return st;
  for (auto& [k, v] : kv) at->of[k.Scalar()] = r.key_at(k, v);
  std::vector<std::string> names;
  for (const auto& p : d.processes) names.push_back(p.name);
  auto process = [&](const YAML::Node& v, const std::string& kpath, size_t* out) -> Status {
    std::string name;
    if (Status st = r.get_string(v, kpath, false, &name); !st) return st;
    int idx = d.process_index(name);
    if (idx < 0)
      return r.error(v, kpath, fmt::format("no process '{}'{}", name, did_you_mean(name, names)));
    *out = static_cast<size_t>(idx);
    return {};
  };
  bool have_from = false, have_to = false;
  l->options = d.link;
  // The link's preset first: its own keys then override its choices.
  for (auto& [k, v] : kv) {
    if (k.Scalar() != "preset") continue;
    const std::string kpath = path + ".preset";
    if (Status st = r.get_string(v, kpath, false, &l->preset); !st) return st;
    if (Status st = apply_preset(l->preset, &l->options); !st) return r.error(v, kpath, st.message());
  }
  std::vector<std::pair<const LinkKey*, YAML::Node>> tcp_keys;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "from") {
      have_from = true;
      st = process(v, kpath, &l->from);
    } else if (key == "to") {
      have_to = true;
      st = process(v, kpath, &l->to);
    } else if (key == "port") {
      st = r.get(v, kpath, &l->port);
    } else if (key == "preset") {
      continue;
    } else if (const LinkKey* lk = find_link_key(key)) {
      st = lk->read(r, v, kpath, &l->options);
      if (lk->only) tcp_keys.push_back({lk, v});
    }
    if (!st) return st;
  }
  if (!have_from || !have_to)
    return r.error(n, "", fmt::format("{}: missing required key '{}'", path, have_from ? "to" : "from"));
  for (auto& [lk, v] : tcp_keys)
    if (!key_applies(lk->only, l->options.transport))
      return r.error(v, path + "." + lk->name,
                     fmt::format("'{}' is a {} option; this link's transport is {}", lk->name,
                                 lk->only, l->options.transport));
  return {};
}

// ---------------------------------------------------------------- the root

// Whether link i's receiver keeps a frame's slot until the sinks
// acknowledge what it became, not only while the frame is in flight: a
// node that keeps copies (its own choice, or one that merges, splits, or
// runs operators that emit, which may keep state). A sink lets a slot go
// once it checked the frame, a node that only forwards once it sent it
// (it claims the frame instead: AckLedger), as without acks. Read from the
// file alone, so that every program resolves the same slots.
// (forwards_without_copies, with the operators' specs for the chain it is
// not built from yet: an operator that works in place keeps no state.)
static bool receiver_holds_slots_for_acks(const Deployment& d, size_t i) {
  const size_t p = d.links[i].to;
  if (d.processes[p].role != Role::kNode) return false;
  bool acked_out = false;
  for (size_t l : d.outputs_of(p)) acked_out = acked_out || d.links[l].options.acks;
  if (!acked_out) return false;  // sent and gone: the slot comes back then
  if (!links_let_forward_without_copies(d, p)) return true;
  for (const OperatorConfig& op : d.processes[p].operators) {
    const OperatorSpec* spec = find_operator_spec(op.kind);
    if (!spec || spec->emits) return true;
  }
  return false;
}

Status parse_root(const Reader& r, const YAML::Node& root, Deployment* d) {
  if (!root.IsMap())
    return r.error(root, "", fmt::format("a deployment is a map of keys, got {}", node_kind(root)));
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(root, "", key_names(), &kv); !st) return st;
  Places places{r.file_line(root), {}};
  std::map<std::string, YAML::Node> given;
  for (auto& [k, v] : kv) {
    given[k.Scalar()] = v;
    places.of[k.Scalar()] = r.key_at(k, v);
  }

  // The preset first: explicit keys then override its choices.
  if (auto it = given.find("preset"); it != given.end()) {
    if (Status st = r.get_string(it->second, "preset", false, &d->preset); !st) return st;
  }
  if (Status st = apply_preset(d->preset, &d->link); !st)
    return given.count("preset") ? r.error(given["preset"], "preset", st.message()) : st;
  // The one node-level choice of a preset: original Borealis hands each event
  // from stage to stage as a fresh copy (the study's section 3.2).
  d->handover_copy = d->preset == "original";
  // The guarantee next: it sets acks, restart and checkpoint_interval_ms,
  // which the keys given then beat (validate_guarantee refuses one that
  // breaks its promise). Unless given, `original` keeps what the study had:
  // no acks, no restarts.
  Guarantee g = d->preset == "original" ? Guarantee::kNone : d->guarantee;
  for (const auto& key : keys()) {
    auto it = given.find(key.name);
    if (key.name != "guarantee" || it == given.end()) continue;
    if (Status st = key.read(r, it->second, d); !st) return st;
    g = d->guarantee;
  }
  apply_guarantee(g, d);

  std::string default_host = ProcessConfig().host;
  if (auto it = given.find("host"); it != given.end())
    if (Status st = r.get_string(it->second, "host", false, &default_host); !st) return st;

  for (const auto& key : link_keys()) {
    auto it = given.find(key.name);
    if (it == given.end()) continue;
    if (Status st = key.read(r, it->second, key.name, &d->link); !st) return st;
  }
  for (const auto& key : keys()) {
    auto it = given.find(key.name);
    if (it == given.end() || key.name == "guarantee") continue;
    if (Status st = key.read(r, it->second, d); !st) return st;
  }
  if (auto it = given.find("schemas"); it != given.end())
    if (Status st = parse_schemas(r, it->second, d); !st) return st;
  // A named schema sets the tuple size of the loadgens' stream.
  if (const SchemaConfig* sc = d->find_schema(d->link.schema)) {
    if (given.count("tuple_bytes") && d->tuple_bytes != sc->schema.tuple_bytes())
      return places.error("tuple_bytes",
                          fmt::format("{} bytes, but schema '{}' ({}) has tuples of {} bytes; leave "
                                      "tuple_bytes out or give the schema its tuple_bytes",
                                      d->tuple_bytes, sc->schema.name(), sc->source_line,
                                      sc->schema.tuple_bytes()));
    d->tuple_bytes = sc->schema.tuple_bytes();
  }
  d->link.tuple_bytes = d->tuple_bytes;
  d->link.wait = d->wait;

  std::vector<Places> host_places;
  if (auto hit = given.find("hosts"); hit != given.end() && !hit->second.IsNull()) {
    const YAML::Node& list = hit->second;
    if (!list.IsSequence())
      return r.error(list, "hosts", fmt::format("expected a list of hosts, got {}", node_kind(list)));
    for (size_t i = 0; i < list.size(); ++i) {
      HostConfig h;
      host_places.emplace_back();
      if (Status st = parse_host(r, list[i], i, d->host_rate_bps, &h, &host_places.back()); !st)
        return st;
      for (size_t j = 0; j < d->hosts.size(); ++j) {
        if (d->hosts[j].name == h.name)
          return host_places.back().error(fmt::format("hosts.{}.name", i), "name",
                                          fmt::format("duplicate host name '{}' (first at {})",
                                                      h.name, d->hosts[j].source_line));
        if (d->hosts[j].address == h.address)
          return host_places.back().error(
              fmt::format("hosts.{}.address", i), "address",
              fmt::format("hosts '{}' and '{}' have one address, {} (first at {}); each host is "
                          "reached at its own",
                          d->hosts[j].name, h.name, h.address, host_places[j].at("address")));
      }
      d->hosts.push_back(std::move(h));
    }
  }

  auto pit = given.find("processes");
  if (pit == given.end())
    return Status::Error(fmt::format("{}: missing required key 'processes' (loadgen, node..., "
                                     "sink)",
                                     places.root));
  const YAML::Node& list = pit->second;
  if (!list.IsSequence())
    return r.error(list, "processes", fmt::format("expected a list of processes, got {}", node_kind(list)));
  std::map<std::string, std::string> first_at;
  std::vector<Places> process_places(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    ProcessConfig p;
    if (Status st = parse_process(r, list[i], i, default_host, &p, &process_places[i]); !st)
      return st;
    if (auto [it, fresh] = first_at.emplace(p.name, p.source_line); !fresh)
      return Status::Error(fmt::format("{}: duplicate process name '{}' (first at {})",
                                       p.source_line, p.name, it->second));
    d->processes.push_back(std::move(p));
  }
  if (!d->hosts.empty())
    if (Status st = resolve_hosts(d, places, process_places); !st) return st;

  std::vector<Places> link_places;
  auto lit = given.find("links");
  if (lit == given.end()) {
    // The shorthand: the processes form a chain in the order listed.
    d->chain = true;
    for (size_t i = 0; i + 1 < d->processes.size(); ++i) {
      LinkConfig l;
      l.from = i;
      l.to = i + 1;
      l.options = d->link;
      l.source_line = places.at("processes");
      link_places.push_back({l.source_line, {}});
      d->links.push_back(std::move(l));
    }
  } else {
    const YAML::Node& links = lit->second;
    if (!links.IsSequence())
      return r.error(links, "links", fmt::format("expected a list of links, got {}", node_kind(links)));
    const std::string chain_at = r.is_chain(links) ? r.chain_at() : std::string();
    d->chain = !chain_at.empty();
    for (size_t i = 0; i < links.size(); ++i) {
      LinkConfig l;
      link_places.emplace_back();
      if (Status st = parse_link(r, links[i], i, *d, chain_at, &l, &link_places.back()); !st)
        return st;
      l.options.tuple_bytes = d->tuple_bytes;
      l.options.wait = d->wait;
      d->links.push_back(std::move(l));
    }
  }
  if (Status st = expand_parallelism(d, places, &process_places, &link_places); !st) return st;
  // slots: a link with acks that no one sized gets kAckedLinkSlots if its
  // receiver holds the slots until the sinks acknowledge.
  for (size_t i = 0; i < d->links.size(); ++i) {
    LinkOptions& o = d->links[i].options;
    if (o.acks && !places.of.count("slots") && !link_places[i].of.count("slots") &&
        receiver_holds_slots_for_acks(*d, i))
      o.slots = kAckedLinkSlots;
  }
  // A top-level key is the default of every link it means something to
  // (`congestion` for the tcp links, `fabric_provider` for the fabric ones)
  // and is unused by the others, so `--set preset=fabric-opt` runs a file
  // written for tcp. On a link of `links:`, a key its carrier does not have
  // is an error (parse_link). A top-level key that no link's carrier reads
  // is a warning: the file says something that has no effect.
  for (const auto& key : link_keys()) {
    if (!key.only || !places.of.count(key.name)) continue;
    std::vector<std::string> carriers;
    bool read = false;
    for (const LinkConfig& l : d->links) {
      read = read || key_applies(key.only, l.options.transport);
      if (std::find(carriers.begin(), carriers.end(), l.options.transport) == carriers.end())
        carriers.push_back(l.options.transport);
    }
    if (read) continue;
    std::string only = key.only;
    for (size_t bar; (bar = only.find('|')) != std::string::npos;) only.replace(bar, 1, " or ");
    const std::string w = places.at(key.name);
    d->warnings.push_back(fmt::format(
        "{}: {}'{}' is a {} option and no link's transport is {} (the links are {}); it has no "
        "effect",
        w, w.rfind("--set ", 0) == 0 ? "" : fmt::format("key '{}': ", key.name), key.name,
        key.only, only, fmt::join(carriers, ", ")));
  }
  if (Status st = validate_guarantee(*d, places, link_places, process_places); !st) return st;
  if (Status st = validate(*d, places, link_places, process_places); !st) return st;
  if (Status st = resolve_schemas(d, places); !st) return st;
  if (Status st = validate_split_keys(*d, process_places); !st) return st;
  if (Status st = validate_restarts(*d, places, link_places, process_places); !st) return st;
  for (size_t l = 0; l < d->links.size(); ++l) {
    const LinkOptions o = d->link_options(l, 0);
    d->links[l].options.tuple_bytes = o.tuple_bytes;
  }
  return {};
}

}  // namespace
}  // namespace cfg

using namespace cfg;

Status parse_deployment(const std::string& yaml, const std::string& name,
                        const std::vector<std::string>& overrides, Deployment* out) {
  Reader reader(name);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    return syntax_error(yaml, name, e);
  } catch (const YAML::Exception& e) {
    return Status::Error(fmt::format("{}: invalid YAML: {}", name, e.what()));
  }
  Deployment d;
  d.file = name;
  try {
    if (!root.IsNull() && !root.IsMap())
      return reader.error(root, "", fmt::format("a deployment is a map of keys, got {}",
                                                node_kind(root)));
    // An empty file is an empty map: it then lacks 'processes'.
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    // Overrides of `links` go last: on a chain file the first of them writes
    // the chain's links out, from the processes as every other override left them
    // (`--set links.0.x=y --set processes.1.name=z` then works in either order).
    auto into_links = [](const std::string& o) {
      return o.rfind("links.", 0) == 0 || o.rfind("links=", 0) == 0;
    };
    for (bool links : {false, true})
      for (const auto& o : overrides)
        if (into_links(o) == links)
          if (Status st = apply_override(root, o, &reader); !st) return st;
    if (Status st = parse_root(reader, root, &d); !st) return st;
  } catch (const YAML::Exception& e) {
    // Should not happen (every access is checked); keep it a value anyway.
    return Status::Error(fmt::format("{}: {}", name, e.what()));
  }
  *out = std::move(d);
  return {};
}

Status load_deployment(const std::string& path, const std::vector<std::string>& overrides,
                       Deployment* out) {
  std::ifstream in(path);
  if (!in) return Status::Error(fmt::format("{}: cannot open the deployment file", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::Error(fmt::format("{}: read failed", path));
  return parse_deployment(text.str(), path, overrides, out);
}

}  // namespace sluice
