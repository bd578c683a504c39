// validate and keys: what a deployment file, or the program itself, says;
// nothing is started.
#include <fmt/format.h>

#include "deploy/cli.h"
#include "deploy/launcher.h"
#include "graph/config.h"
#include "graph/config_doc.h"

namespace sluice::cli {
namespace {

class Validate : public Subcommand {
 public:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "validate",
        "Parse and validate FILE.yaml with the overrides; print the graph (links, unions,\n"
        "splits) and every key resolved. `check` is the same");
    sub->alias("check");
    args_.declare(sub);
    return sub;
  }

  int run() override {
    Deployment d;
    if (Status st = load_deployment(args_.file, args_.sets, &d); !st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    for (const std::string& w : d.warnings) fmt::print(stderr, "sluice-deploy: warning: {}\n", w);
    fmt::print("# {}: ok ({} processes, preset {})\n{}{}", args_.file, d.processes.size(), d.preset,
               describe_graph(d), dump_deployment(d));
    return kOk;
  }

 private:
  FileArgs args_;
};

// The reference of the deployment file and the operators, made from their
// declarations (graph/config_doc.h): docs/CONFIG.md, docs/OPERATORS.md.
class Keys : public Subcommand {
 public:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "keys", "Print the reference of every deployment key (its section, type, default, what\n"
                "each preset sets, the carrier that reads it, what it does) as Markdown:\n"
                "docs/CONFIG.md is this output; with --operators, docs/OPERATORS.md");
    sub->add_flag("--operators", operators_, "Print docs/OPERATORS.md: every operator and its parameters");
    return sub;
  }

  int run() override {
    fmt::print("{}", operators_ ? operators_markdown() : keys_markdown());
    return kOk;
  }

 private:
  bool operators_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> validate_command() { return std::make_unique<Validate>(); }
std::unique_ptr<Subcommand> keys_command() { return std::make_unique<Keys>(); }

}  // namespace sluice::cli
