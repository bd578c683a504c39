// validate and keys: what a deployment file, or the program itself, says;
// nothing is started.
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "deploy/cli.h"
#include "deploy/launcher.h"
#include "graph/config.h"
#include "graph/config_doc.h"

namespace sluice::cli {
namespace {

using Json = nlohmann::ordered_json;

// A resolved deployment (YAML, as dump_deployment writes it) as JSON: maps,
// lists, and scalars as numbers, booleans, null or strings.
Json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json j = Json::object();
      for (const auto& kv : n) j[kv.first.Scalar()] = to_json(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      Json j = Json::array();
      for (const auto& e : n) j.push_back(to_json(e));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted in the YAML: a string whatever it looks like
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      char* end = nullptr;
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && *end == '\0') return i;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && *end == '\0' && s.find_first_of("0123456789") != std::string::npos) return d;
      return s;
    }
    default:
      return nullptr;
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (size_t b = 0; b < text.size();) {
    size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    out.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

class Validate : public Subcommand {
 public:
  ExitCodes exit_codes() const override {
    return {"the file is valid", "", "a bad option, a file that cannot be read or is invalid"};
  }

  int run() override {
    Deployment d;
    if (Status st = load_deployment(args_.file, args_.sets, &d); !st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      if (json_) fmt::print("{}\n", Json{{"deployment", args_.file}, {"ok", false}, {"error", st.message()}}.dump());
      return kBadInput;
    }
    for (const std::string& w : d.warnings) fmt::print(stderr, "sluice-deploy: warning: {}\n", w);
    if (!json_) {
      fmt::print("# {}: ok ({} processes, preset {})\n{}{}", args_.file, d.processes.size(), d.preset,
                 describe_graph(d), dump_deployment(d));
      return kOk;
    }
    Json j;
    j["deployment"] = args_.file;
    j["ok"] = true;
    j["preset"] = d.preset;
    j["processes"] = d.processes.size();
    j["warnings"] = d.warnings;
    std::vector<std::string> graph;
    for (const std::string& l : lines_of(describe_graph(d)))
      if (size_t b = l.find_first_not_of("# "); b != std::string::npos) graph.push_back(l.substr(b));
    j["graph"] = graph;
    j["resolved"] = to_json(YAML::Load(dump_deployment(d)));
    fmt::print("{}\n", j.dump());
    return kOk;
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "validate",
        "Parse and validate FILE.yaml with the overrides; print the graph (links, unions,\n"
        "splits) and every key resolved. `check` is the same");
    sub->alias("check");
    args_.declare(sub);
    add_json_flag(sub, &json_,
                  "the verdict, the graph's lines and the resolved deployment (or the error)");
    return sub;
  }

 private:
  FileArgs args_;
  bool json_ = false;
};

// The references: the deployment file's keys and the operators, made from
// their declarations (graph/config_doc.h), and the commands, made from the
// verbs (cli_doc.cc): docs/CONFIG.md, docs/OPERATORS.md, docs/COMMANDS.md.
class Keys : public Subcommand {
 public:
  Keys(const CLI::App& program, const Verbs& verbs) : program_(program), verbs_(verbs) {}

  ExitCodes exit_codes() const override { return {"printed", "", "a bad option"}; }

  int run() override {
    if (operators_ && commands_) {
      fmt::print(stderr, "sluice-deploy: keys: --operators or --commands, not both\n");
      return kBadInput;
    }
    fmt::print("{}", operators_  ? operators_markdown()
                     : commands_ ? commands_markdown(program_, verbs_)
                                 : keys_markdown());
    return kOk;
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "keys", "Print the reference of every deployment key (its section, type, default, what\n"
                "each preset sets, the carrier that reads it, what it does) as Markdown:\n"
                "docs/CONFIG.md is this output; with --operators, docs/OPERATORS.md; with\n"
                "--commands, docs/COMMANDS.md");
    sub->add_flag("--operators", operators_, "Print docs/OPERATORS.md: every operator and its parameters");
    sub->add_flag("--commands", commands_,
                  "Print docs/COMMANDS.md: every command, its options and its exit codes");
    return sub;
  }

 private:
  const CLI::App& program_;
  const Verbs& verbs_;
  bool operators_ = false, commands_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> validate_command() { return std::make_unique<Validate>(); }
std::unique_ptr<Subcommand> keys_command(const CLI::App& program, const Verbs& verbs) {
  return std::make_unique<Keys>(program, verbs);
}

}  // namespace sluice::cli
