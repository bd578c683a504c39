// deploy/: sluice-deploy; may include every folder below it.
//
// sluice-deploy's command line: one Subcommand per verb, each declaring its
// options on its own CLI11 subcommand and running from them.
//
//   deploy_main.cc    the program: the options verbs share, the verbs in order, parse, dispatch
//   cli_inspect.cc    validate, keys: what a file or the program says, nothing started
//   cli_launch.cc     plan, run, up: a deployment read, its launcher and executor, started
//   cli_session.cc    status, down: a deployment that `up` (or `run`) started
//   cli_render.cc     render: the deployment for Kubernetes or a Slurm batch script
//   cli_doc.cc        docs/COMMANDS.md and --help's exit status, from the verbs themselves
//
// The same ways everywhere: a verb that prints results takes --json (one
// JSON object on stdout, with an "error" when it failed); a verb that reads a
// run directory takes it as --run-dir DIR.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace sluice::cli {

// Exit codes; what each means per verb is its exit_codes().
constexpr int kOk = 0;
constexpr int kRunFailed = 1;
constexpr int kBadInput = 2;

// One verb of sluice-deploy.
class Subcommand {
 public:
  virtual ~Subcommand() = default;
  // Adds the verb to `app` with its options; their values land in this object.
  CLI::App* add_to(CLI::App& app) { return app_ = declare(app); }
  const CLI::App* app() const { return app_; }
  // Runs it once the command line is parsed; returns the exit code.
  virtual int run() = 0;
  // What exit codes 0, 1 and 2 mean for this verb ("" for one it never
  // gives): --help and docs/COMMANDS.md print these.
  struct ExitCodes {
    const char* ok;
    const char* failed;
    const char* bad_input;
  };
  virtual ExitCodes exit_codes() const = 0;

 protected:
  virtual CLI::App* declare(CLI::App& app) = 0;

 private:
  CLI::App* app_ = nullptr;
};

using Verbs = std::vector<std::unique_ptr<Subcommand>>;

std::unique_ptr<Subcommand> validate_command();
std::unique_ptr<Subcommand> plan_command();
std::unique_ptr<Subcommand> run_command();
std::unique_ptr<Subcommand> up_command();
std::unique_ptr<Subcommand> status_command();
std::unique_ptr<Subcommand> down_command();
std::unique_ptr<Subcommand> render_command();
// keys reads the program's verbs for --commands.
std::unique_ptr<Subcommand> keys_command(const CLI::App& program, const Verbs& verbs);

// The deployment file and its overrides, which every verb that reads a
// file takes.
struct FileArgs {
  std::string file;
  std::vector<std::string> sets;
  void declare(CLI::App* sub);
};

// --json, worded for what the verb prints.
void add_json_flag(CLI::App* sub, bool* json, const std::string& what);

// The run directory of a verb that reads one: --run-dir DIR, or as a
// positional argument (the way status and down first took it).
struct RunDirArg {
  std::string option, positional;
  void declare(CLI::App* sub, const std::string& help);
  // The directory given, or an error when none (or two different) was.
  Status get(std::string* dir) const;
};

// --timeout, --wait: a finite number of seconds above 0. (CLI::PositiveNumber
// would say "not in range 2.22507e-308 to" a 309-digit number.)
CLI::Validator seconds_validator();

// --help's closing text: what each exit code means for each verb.
std::string exit_status_help(const Verbs& verbs);
// docs/COMMANDS.md: every verb, its options and its exit codes.
std::string commands_markdown(const CLI::App& program, const Verbs& verbs);

}  // namespace sluice::cli
