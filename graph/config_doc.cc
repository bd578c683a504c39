// The reference of every deployment key, as Markdown, made from the key
// declarations themselves (config_keys.cc): their names, types and docs, the
// defaults a fresh Deployment and LinkOptions write, and what each preset
// changes. docs/CONFIG.md is this text; a test fails when they differ, so
// the reference cannot drift from the parser.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "graph/config.h"
#include "graph/config_keys.h"

namespace sluice::cfg {

namespace {

// What `write` emits for one key, as it would appear in a resolved file.
template <class Write, class T>
std::string value_of(const std::string& name, const Write& write, const T& x) {
  YAML::Emitter e;
  e << YAML::Flow << YAML::BeginMap;
  write(e, x);
  e << YAML::EndMap;
  YAML::Node n = YAML::Load(e.c_str());
  YAML::Node v = n[name];
  if (!v) return "";
  if (v.IsScalar()) return v.Scalar().empty() ? "\"\"" : v.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << v;
  return out.c_str();
}

std::string cell(std::string s) {
  std::string r;
  for (char c : s) r += c == '|' ? std::string("\\|") : std::string(1, c);
  return r;
}

void section(std::string* out, const char* title, const char* intro,
             const std::vector<SectionKey>& keys) {
  *out += fmt::format("\n## {}\n\n{}\n\n| key | default | what it does |\n|---|---|---|\n", title, intro);
  for (const auto& k : keys) *out += fmt::format("| `{}` | {} | {} |\n", k.name, cell(k.def), cell(k.doc));
}

}  // namespace

std::string config_reference_markdown() {
  std::string out =
      "# Deployment keys\n\n"
      "Every key a deployment file may hold, generated from the key declarations in\n"
      "`graph/config_keys.cc` by `sluice-deploy keys` (do not edit by hand: the test\n"
      "`docs_config_reference` fails when this file and the declarations differ).\n"
      "`sluice-deploy check FILE.yaml` prints every key of a file resolved; `--set KEY=VALUE`\n"
      "overrides one on the command line.\n";

  const std::vector<std::string> presets = {"original", "tcp-opt", "fabric-opt", "ucx-opt"};
  std::vector<LinkOptions> preset_opts;
  for (const auto& p : presets) {
    LinkOptions o;
    (void)apply_preset(p, &o);
    preset_opts.push_back(o);
  }
  out += "\n## Link keys\n\n"
         "At the top level (every link's default), per link in `links:`, or for a chain as\n"
         "`links.N.KEY`. `carrier` says which carrier reads the key (a key for another carrier\n"
         "on a link is an error naming both). `preset` is where the file's `preset` sets it.\n\n"
         "| key | carrier | type | default | preset | what it does |\n|---|---|---|---|---|---|\n";
  const LinkOptions base;
  for (const auto& k : link_keys()) {
    const std::string def = value_of(k.name, k.write, base);
    std::string set;
    for (size_t i = 0; i < presets.size(); ++i) {
      const std::string v = value_of(k.name, k.write, preset_opts[i]);
      if (v != def) set += fmt::format("{}{}: {}", set.empty() ? "" : ", ", presets[i], v);
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", k.name, k.only ? k.only : "all",
                       cell(k.type), cell(def), cell(set), cell(k.doc));
  }

  out += "\n## Top-level keys\n\n| key | type | default | what it does |\n|---|---|---|---|\n";
  const Deployment d;
  for (const auto& k : keys())
    out += fmt::format("| `{}` | {} | {} | {} |\n", k.name, cell(k.type),
                       cell(value_of(k.name, k.write, d)), cell(k.doc));

  section(&out, "Sections", "The top level's structure.", root_section_keys());
  section(&out, "Processes", "Each entry of `processes:`.", process_keys());
  section(&out, "Hosts", "Each entry of `hosts:`.", host_keys());
  section(&out, "Schemas", "Each entry of `schemas:`.", schema_keys());
  return out;
}

}  // namespace sluice::cfg
