// docs/CONFIG.md from the key tables (config_keys.h): nothing in it is
// written by hand except the paragraphs between the tables below.
//
// A key's default is what a file that leaves it out gets: the field's
// initial value (graph/config.h) after the default preset, tcp-opt. Which
// presets change a key is found by resolving a minimal file once per preset
// and writing every key back with its own `write` (the same code that
// writes resolved.yaml), so the table follows apply_preset and parse_root
// with nothing to keep in step. A top-level key's section is that of the
// group it is declared in (kSectionStarts: the first key of each group).
#include "graph/config_doc.h"

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "graph/config.h"
#include "graph/config_keys.h"
#include "graph/operator.h"
#include "graph/registry.h"

namespace sluice {

using namespace cfg;

namespace {

// keys() is declared in groups; each group starts at one of these keys and
// runs to the next. A key added inside a group takes its section.
const std::pair<const char*, const char*> kSectionStarts[] = {
    {"handover", "node"},          {"schema", "stream"},
    {"wait", "node"},              {"clock_ghz", "accounting"},
    {"base_port", "processes"},    {"launcher", "launcher and hosts"},
    {"metrics", "metrics"},        {"guarantee", "supervisor"},
};

// A minimal valid file: one loadgen into one sink.
std::string minimal_file(const char* preset) {
  std::string f = preset ? fmt::format("preset: {}\n", preset) : std::string();
  return f + "processes:\n  - {name: gen, role: loadgen}\n  - {name: sink, role: sink}\n";
}

Deployment resolve(const char* preset) {
  Deployment d;
  Status st = parse_deployment(minimal_file(preset), "keys", {}, &d);
  if (!st) throw std::runtime_error("keys: the minimal file does not resolve: " + st.message());
  return d;
}

// The value a key's own `write` gives it, as it would appear in a file.
std::string value_of(const std::string& name, const std::function<void(YAML::Emitter&)>& write) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  write(e);
  e << YAML::EndMap;
  YAML::Node n = YAML::Load(e.c_str());
  if (!n[name]) return "(unset)";
  if (n[name].IsNull()) return "null";
  std::string v = n[name].Scalar();
  return v.empty() ? "\"\"" : v;
}

// `|` inside a Markdown table cell ends the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string code(const std::string& s) { return "`" + s + "`"; }

std::string carriers_of(const char* only) {
  if (!only) return "every carrier";
  std::string o = only, out;
  size_t pos = 0;
  while (pos <= o.size()) {
    size_t bar = o.find('|', pos);
    if (bar == std::string::npos) bar = o.size();
    out += (out.empty() ? "" : ", ") + o.substr(pos, bar - pos);
    pos = bar + 1;
  }
  return out;
}

struct Row {
  std::string name, section, type, def, presets, carrier, doc;
};

std::vector<Row> rows() {
  const Deployment base = resolve(nullptr);
  std::vector<Deployment> by_preset;
  for (const Preset& p : presets()) by_preset.push_back(resolve(p.name));
  // A preset "changes" a key when its value differs from the fields' initial
  // values (a default-constructed Deployment with no preset applied) with
  // the default guarantee's keys: what the guarantee sets is no preset's
  // choice, the guarantee `original` implies (none) is.
  Deployment bare;
  apply_guarantee(bare.guarantee, &bare);

  std::vector<Row> out;
  for (const auto& k : link_keys()) {
    Row r;
    r.name = k.name;
    r.section = "link";
    r.type = k.type;
    auto val = [&](const LinkOptions& l) {
      return value_of(k.name, [&](YAML::Emitter& e) { k.write(e, l); });
    };
    r.def = val(base.link);
    const std::string initial = val(bare.link);
    for (size_t i = 0; i < by_preset.size(); ++i) {
      const std::string v = val(by_preset[i].link);
      if (v != initial) r.presets += fmt::format("{}{}: {}", r.presets.empty() ? "" : ", ", presets()[i].name, code(v));
    }
    r.carrier = carriers_of(k.only);
    r.doc = k.doc;
    out.push_back(r);
  }
  std::string section = "?";
  for (const auto& k : keys()) {
    for (const auto& [first, name] : kSectionStarts)
      if (k.name == first) section = name;
    Row r;
    r.name = k.name;
    r.section = section;
    r.type = k.type;
    auto val = [&](const Deployment& d) {
      return value_of(k.name, [&](YAML::Emitter& e) { k.write(e, d); });
    };
    r.def = val(base);
    const std::string initial = val(bare);
    for (size_t i = 0; i < by_preset.size(); ++i) {
      const std::string v = val(by_preset[i]);
      // Resolution may fill a key every preset alike (not a preset's choice):
      // only a value that differs from the no-preset file's counts.
      if (v != initial && v != r.def)
        r.presets += fmt::format("{}{}: {}", r.presets.empty() ? "" : ", ", presets()[i].name, code(v));
    }
    if (r.def == "(unset)") r.def = "unset";
    r.carrier = "(not a link key)";
    r.doc = k.doc;
    out.push_back(r);
  }
  return out;
}

void section_table(std::string& md, const std::string& title, const std::string& intro,
                   const std::vector<SectionKey>& keys) {
  md += fmt::format("### {}\n\n{}\n\n| key | default | what it is |\n|---|---|---|\n", title, intro);
  for (const auto& k : keys)
    md += fmt::format("| {} | {} | {} |\n", code(k.name), cell(k.def), cell(k.doc));
  md += "\n";
}

// The presets of the registry, one line each.
std::string presets_list() {
  std::string out;
  for (const Preset& p : presets()) out += fmt::format("- `{}`: {}\n", p.name, p.summary);
  return out;
}

}  // namespace

std::string keys_markdown() {
  std::string md =
      "# Configuration keys\n\n"
      "<!-- Generated by `sluice-deploy keys` from graph/config_keys.cc and graph/registry.cc;\n"
      "     do not edit.\n"
      "     The tests graph_config_doc_test and docs_config_reference fail when this file\n"
      "     and the tables differ: regenerate with\n"
      "       build/deploy/sluice-deploy keys > docs/CONFIG.md -->\n\n"
      "Every key of a deployment file (`deploy/examples/pipeline.yaml` sets the common ones,\n"
      "each with a comment). Keys are resolved in this order, each beating the ones before it:\n\n"
      "    field defaults < top-level preset < guarantee < top-level keys < a link's preset\n"
      "    < a link's keys < --set KEY=VALUE\n\n"
      "`guarantee` sets `acks`, `restart` and `checkpoint_interval_ms`; one of them given beside\n"
      "it wins where it keeps the guarantee's promise, and is an error where it breaks it.\n\n"
      "`sluice-deploy validate FILE` prints every key resolved. The presets (`preset`, the\n"
      "default `tcp-opt`):\n\n" +
      presets_list() +
      "\nThe *presets* column lists each preset that changes a key from its field default, and\n"
      "*default* is what a file that says nothing gets (tcp-opt applied).\n\n"
      "## Link keys\n\n"
      "Set at the top level they are the default of every link; a link of `links:` may set\n"
      "them for itself. A key whose *carrier* is not every carrier is read only by that\n"
      "carrier's links: a link of another carrier that sets it is an error, and a top-level\n"
      "one that no link's carrier reads is a warning.\n\n"
      "| key | type | default | presets | carrier | what it does |\n"
      "|---|---|---|---|---|---|\n";
  const std::vector<Row> all = rows();
  for (const Row& r : all)
    if (r.section == "link")
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", code(r.name), cell(r.type), code(cell(r.def)),
                        cell(r.presets), r.carrier, cell(r.doc));
  md +=
      "\n## Top-level keys\n\n"
      "Keys of the whole deployment; no carrier reads them (the programs and sluice-deploy do).\n\n"
      "| key | section | type | default | presets | what it does |\n"
      "|---|---|---|---|---|---|\n";
  for (const Row& r : all)
    if (r.section != "link")
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", code(r.name), r.section, cell(r.type),
                        code(cell(r.def)), cell(r.presets), cell(r.doc));
  md += "\n## Sections\n\nKeys with a section below them, and the keys of those sections.\n\n";
  section_table(md, "Top level", "The keys that hold sections, and `preset`.", root_section_keys());
  section_table(md, "A process (`processes:`)", "One entry per process.", process_keys());
  section_table(md, "A link (`links:`)",
                "A link's own keys; it may also set any link key above.", link_own_keys());
  section_table(md, "A host (`hosts:`)", "One entry per machine (or network namespace).", host_keys());
  section_table(md, "A schema (`schemas:`)", "name -> the schema.", schema_keys());
  section_table(md, "A field of a schema (`fields:`)", "One entry per field after the sequence number.",
                field_keys());
  md += "Operators and their parameters: [OPERATORS.md](OPERATORS.md).\n";
  return md;
}

namespace {

// What each shipped kind counts, so the sink reconciles every input tuple
// (the accounts go into END; sink/verifier.cc checks them). A kind missing
// here fails operators_markdown(), so a new operator comes with its line.
const std::map<std::string, std::string>& accounting() {
  static const std::map<std::string, std::string> a = {
      {"filter",
       "Rewrites events in place: the survivors are compacted to the front of each event, the "
       "event resealed and the descriptor shrunk; an event whose tuples are all dropped stays, "
       "empty. Nothing is added to END: the sink counts as `filtered` the tuples an event's "
       "sequence span holds and its tuples lack."},
      {"project",
       "Rewrites every tuple in place into the new, narrower schema; no tuple is dropped and "
       "nothing is counted."},
      {"groupby",
       "Consumes its input (the slot is freed) and emits rows as a derived stream of its own, "
       "numbered from 0, into the pool's reserve. Each input tuple is counted `aggregated` in "
       "END (a late tuple, earlier than the open window, too: consumed, in no window), and the "
       "tuples a filter upstream dropped inside those events `filtered`."},
      {"correlate",
       "Consumes its input and emits one row per match as a derived stream; every input tuple "
       "is counted `aggregated` (and `filtered` what a filter upstream dropped inside its "
       "events). A row's `seq` is the derived stream's own, not an input tuple's."},
      {"join",
       "Consumes its input and emits one row per matched tuple as a derived stream; every "
       "input tuple, matched or not, is counted `joined` (and `filtered` what a filter "
       "upstream dropped inside its events). Unmatched tuples are dropped."},
      {"moving_avg",
       "Consumes its input and emits one (in_seq, value, avg) row per tuple as a derived "
       "stream; every input tuple is counted `aggregated` (and `filtered` what a filter "
       "upstream dropped)."},
  };
  return a;
}

std::string param_type(const ParamSpec& p) {
  switch (p.type) {
    case ParamType::kU64: return "unsigned integer";
    case ParamType::kI64: return "integer";
    case ParamType::kF64: return "number";
    case ParamType::kString: return "string";
    case ParamType::kEnum: return p.choices ? p.choices : "enum";
    case ParamType::kField: return "field";
    case ParamType::kFieldList: return "list of fields";
  }
  return "?";
}

}  // namespace

std::string operators_markdown() {
  std::string md =
      "# Operators\n\n"
      "<!-- Generated by `sluice-deploy keys --operators` from the operator registry\n"
      "     (graph/operator.cc) and each kind's OperatorSpec; do not edit. The ctest\n"
      "     graph_config_doc_test fails when this file and the registry differ:\n"
      "     regenerate with  build/deploy/sluice-deploy keys --operators > docs/OPERATORS.md -->\n\n"
      "The operators of a node's or a sink's process stage, listed under the process's\n"
      "`operators:` and applied in order on the process stage's thread:\n\n"
      "```yaml\n"
      "  - name: node-b\n"
      "    role: node\n"
      "    operators:\n"
      "      - filter: {field: price, op: ge, value: 500}\n"
      "      - groupby: {group_by: sym, aggregates: \"count, sum(price)\", window: count, size: 1000}\n"
      "```\n\n"
      "Each kind declares its parameters once (its `OperatorSpec`, beside its code in graph/);\n"
      "the deployment parser checks every parameter from that declaration (a typo gets a\n"
      "did-you-mean; a field not in the schema flowing into the operator names the file, line,\n"
      "process and operator) and the runtime makes the chain from it.\n\n"
      "**Accounting.** The sink reconciles every tuple a load generator made: a tuple is\n"
      "received, or an operator says where it went. An operator that drops tuples in place\n"
      "leaves the event's sequence span (the sink counts the difference `filtered`); one that\n"
      "consumes its input adds per-stream accounts to END (`filtered`, `aggregated`, `joined`),\n"
      "and the totals of the derived stream it makes, whose rows the sink checks like a\n"
      "generated stream (checksums, sequence from 0, totals). A count that does not match\n"
      "what is missing is lost (too low) or corrupt (too high), so a miscounting operator\n"
      "fails the run. A key split (`split: key`) adds a `partition` step after the chain;\n"
      "the tuples of an event that went to other links are its `partitioned` account.\n\n"
      "**Cost.** Each operator's cost is the CPU time of the process stage's thread inside it\n"
      "(CLOCK_THREAD_CPUTIME_ID, less the time of the operators it emitted into), with tuples\n"
      "and events in and out: the report's `operator NODE/i:KIND` lines and `operators` in each\n"
      "process's summary JSON. Reading that clock is a system call (1-2 us on a VM), so the\n"
      "first 16 descriptors are timed and then one in 256 at random, each counted 256 times: an\n"
      "unbiased estimate that costs a hop a 128th of a clock read per operator.\n\n"
      "State is sized when the operator is made (`max_groups`, `max_open`, the table, the\n"
      "window); nothing is allocated per event. An operator that consumes its input emits into\n"
      "the pool's reserve slots, so memory and credits downstream stay bounded.\n\n"
      "| kind | emits a derived stream | what it does |\n|---|---|---|\n";
  for (const OperatorSpec& s : operator_specs())
    md += fmt::format("| [{}](#{}) | {} | {} |\n", code(s.kind), s.kind, s.emits ? "yes" : "no (in place)",
                      cell(s.doc));
  for (const OperatorSpec& s : operator_specs()) {
    auto it = accounting().find(s.kind);
    if (it == accounting().end())
      throw std::runtime_error(fmt::format("operator '{}' has no accounting line in graph/config_doc.cc",
                                           s.kind));
    std::string doc = s.doc;
    if (!doc.empty() && doc[0] >= 'a' && doc[0] <= 'z') doc[0] = char(doc[0] - 'a' + 'A');
    md += fmt::format("\n## {}\n\n{}.\n\n", s.kind, doc);
    if (s.params.empty()) {
      md += "No parameters.\n\n";
    } else {
      md += "| parameter | type | default | what it is |\n|---|---|---|---|\n";
      for (const ParamSpec& p : s.params) {
        const std::string def = !p.def ? "required" : *p.def ? code(p.def) : "none";
        md += fmt::format("| {} | {} | {} | {} |\n", code(p.key), cell(param_type(p)), cell(def), cell(p.doc));
      }
      md += "\n";
    }
    md += "Accounting: " + it->second + "\n";
  }
  return md;
}


}  // namespace sluice
