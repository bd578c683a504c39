// sluice-deploy: check a deployment file, or run its graph on its hosts (this
// one, network namespaces, machines over ssh, a Slurm allocation) and report
// what every process measured. Each verb is a Subcommand (cli.h).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "deploy/cli.h"

namespace sluice::cli {

void FileArgs::declare(CLI::App* sub) {
  sub->add_option("FILE.yaml", file, "The deployment file")->required();
  sub->add_option("--set", sets,
                  "Override a key, as KEY=VALUE (repeatable). KEY is a top-level key or a\n"
                  "dotted path (processes.1.host); VALUE is read as YAML. Overrides beat\n"
                  "the file and the preset, and are checked like the file.")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
}

void add_json_flag(CLI::App* sub, bool* json, const std::string& what) {
  sub->add_flag("--json", *json, fmt::format("Print {} as one JSON object on stdout", what));
}

void RunDirArg::declare(CLI::App* sub, const std::string& help) {
  sub->add_option("--run-dir", option, help)->type_name("DIR");
  sub->add_option("RUN_DIR", positional, "The same as --run-dir (the older way to give it)");
}

Status RunDirArg::get(std::string* dir) const {
  if (!option.empty() && !positional.empty() && option != positional)
    return Status::Error(fmt::format("two run directories given: --run-dir {} and {}", option, positional));
  *dir = option.empty() ? positional : option;
  if (dir->empty()) return Status::Error("say which run: --run-dir DIR (or its state.json)");
  return {};
}

CLI::Validator seconds_validator() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0)
          return fmt::format("must be a positive number of seconds, got {}", text);
        return {};
      },
      "SECONDS");
}

}  // namespace sluice::cli

int main(int argc, char** argv) {
  using namespace sluice::cli;
  CLI::App app{"sluice-deploy: run a sluice pipeline described by a deployment file (YAML)."};
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("sluice-deploy: {}\nRun with --help for more information.\n", e.what());
  });

  Verbs verbs;
  verbs.push_back(validate_command());
  verbs.push_back(plan_command());
  verbs.push_back(run_command());
  verbs.push_back(up_command());
  verbs.push_back(status_command());
  verbs.push_back(down_command());
  verbs.push_back(render_command());
  verbs.push_back(keys_command(app, verbs));
  for (auto& v : verbs) v->add_to(app);
  app.footer(exit_status_help(verbs));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; any other parse error exits 2, as --help
    // says (not CLI11's own codes, 105 and up).
    return app.exit(e) == 0 ? kOk : kBadInput;
  }
  for (auto& v : verbs)
    if (v->app()->parsed()) return v->run();
  return kBadInput;  // require_subcommand(1) makes this unreachable
}
