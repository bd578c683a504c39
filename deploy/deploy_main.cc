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
  CLI::App app{
      "sluice-deploy: run a sluice pipeline described by a deployment file (YAML).\n"
      "Exit status:\n"
      "  0  validate: the file is valid; plan: printed, and run could start here; run,\n"
      "     down: every process succeeded and the sink counted no lost, duplicated or\n"
      "     corrupt tuple; up: every process started; status: no process has failed;\n"
      "     --help\n"
      "  1  run, down: the run failed (a process failed, did not start or was killed,\n"
      "     the run timed out or was stopped by a signal, or the sink counted lost,\n"
      "     duplicated or corrupt tuples; down: also its supervisor was gone); up: it\n"
      "     did not come up (stopped and removed again); status: a process failed or\n"
      "     was killed, or the supervisor is gone before down\n"
      "  2  a bad option or value, a deployment file that cannot be read or is invalid,\n"
      "     sluice-loadgen, -node or -sink not found, a launcher that cannot run here\n"
      "     (netns without root's capabilities, a host address the local launcher\n"
      "     lacks, slurm outside an allocation or with fewer nodes than hosts), or\n"
      "     (status, down) no state.json in the run directory given"};
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("sluice-deploy: {}\nRun with --help for more information.\n", e.what());
  });

  std::vector<std::unique_ptr<Subcommand>> verbs;
  verbs.push_back(validate_command());
  verbs.push_back(plan_command());
  verbs.push_back(run_command());
  verbs.push_back(up_command());
  verbs.push_back(status_command());
  verbs.push_back(down_command());
  verbs.push_back(render_command());
  verbs.push_back(keys_command());
  std::vector<CLI::App*> subs;
  for (auto& v : verbs) subs.push_back(v->declare(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; any other parse error exits 2, as --help
    // says (not CLI11's own codes, 105 and up).
    return app.exit(e) == 0 ? kOk : kBadInput;
  }
  for (size_t i = 0; i < verbs.size(); ++i)
    if (subs[i]->parsed()) return verbs[i]->run();
  return kBadInput;  // require_subcommand(1) makes this unreachable
}
