// deploy/: sluice-deploy; may include every folder below it.
//
// sluice-deploy's command line: one Subcommand per verb, each declaring its
// options on its own CLI11 subcommand and running from them.
//
//   deploy_main.cc    the program: --help's text, the verbs in order, parse, dispatch
//   cli_inspect.cc    validate, keys: what a file or the program says, nothing started
//   cli_launch.cc     plan, run, up: a deployment read, its launcher and executor, started
//   cli_session.cc    status, down: a deployment that `up` (or `run`) started
//   cli_render.cc     render: the deployment for Kubernetes or a Slurm batch script
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace sluice::cli {

// Exit codes, as --help and docs/RUNNING.md tell them.
constexpr int kOk = 0;
constexpr int kRunFailed = 1;
constexpr int kBadInput = 2;

// One verb of sluice-deploy.
class Subcommand {
 public:
  virtual ~Subcommand() = default;
  // Adds the verb to `app` with its options; their values land in this object.
  virtual CLI::App* declare(CLI::App& app) = 0;
  // Runs it once the command line is parsed; returns the exit code.
  virtual int run() = 0;
};

std::unique_ptr<Subcommand> validate_command();
std::unique_ptr<Subcommand> plan_command();
std::unique_ptr<Subcommand> run_command();
std::unique_ptr<Subcommand> up_command();
std::unique_ptr<Subcommand> status_command();
std::unique_ptr<Subcommand> down_command();
std::unique_ptr<Subcommand> render_command();
std::unique_ptr<Subcommand> keys_command();

// The deployment file and its overrides, which every verb that reads a
// file takes.
struct FileArgs {
  std::string file;
  std::vector<std::string> sets;
  void declare(CLI::App* sub);
};

// --timeout, --wait: a finite number of seconds above 0. (CLI::PositiveNumber
// would say "not in range 2.22507e-308 to" a 309-digit number.)
CLI::Validator seconds_validator();

}  // namespace sluice::cli
