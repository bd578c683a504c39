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

namespace sluice {

using namespace cfg;

namespace {

const char* const kPresets[] = {"original", "tcp-opt", "fabric-opt", "ucx-opt"};

// keys() is declared in groups; each group starts at one of these keys and
// runs to the next. A key added inside a group takes its section.
const std::pair<const char*, const char*> kSectionStarts[] = {
    {"handover", "node"},          {"schema", "stream"},
    {"wait", "node"},              {"clock_ghz", "accounting"},
    {"base_port", "processes"},    {"launcher", "launcher and hosts"},
    {"metrics", "metrics"},        {"restart", "supervisor"},
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
  for (const char* p : kPresets) by_preset.push_back(resolve(p));
  // A preset "changes" a key when its value differs from the fields' initial
  // values (a default-constructed Deployment with no preset applied).
  const Deployment bare;

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
      if (v != initial) r.presets += fmt::format("{}{}: {}", r.presets.empty() ? "" : ", ", kPresets[i], code(v));
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
        r.presets += fmt::format("{}{}: {}", r.presets.empty() ? "" : ", ", kPresets[i], code(v));
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

}  // namespace

std::string keys_markdown() {
  std::string md =
      "# Configuration keys\n\n"
      "<!-- Generated by `sluice-deploy keys --markdown` from graph/config_keys.cc; do not\n"
      "     edit. The ctest config_doc_current fails when this file and the tables differ:\n"
      "     regenerate with  build/deploy/sluice-deploy keys --markdown > docs/CONFIG.md -->\n\n"
      "Every key of a deployment file (`deploy/examples/pipeline.yaml` sets each one, with a\n"
      "comment). Keys are resolved in this order, each beating the ones before it:\n\n"
      "    field defaults < top-level preset < top-level keys < a link's preset < a link's keys\n"
      "    < --set KEY=VALUE\n\n"
      "`sluice-deploy check FILE` prints every key resolved. The presets are `original` (the\n"
      "original Borealis data path), `tcp-opt` (the default), `fabric-opt` and `ucx-opt`;\n"
      "the *presets* column lists each preset that changes a key from its field default, and\n"
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

std::string keys_text() {
  std::string out;
  for (const Row& r : rows()) out += fmt::format("{}\t{}\t{}\n", r.name, r.def, r.doc);
  return out;
}

}  // namespace sluice
