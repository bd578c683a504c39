// status and down: a deployment that `up` (or `run`) started, reached
// through its run directory's state.json (session.h).
#include <fmt/format.h>

#include <cstdio>

#include "deploy/cli.h"
#include "deploy/session.h"

namespace sluice::cli {
namespace {

int print(const SessionResult& res) {
  fmt::print("{}", res.out);
  std::fflush(stdout);
  fmt::print(stderr, "{}", res.err);
  return res.exit_code;
}

class StatusCommand : public Subcommand {
 public:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "status", "Each process of a run that `up` (or `run`) started: running, exited with its\n"
                  "code, or killed by a signal, and its host");
    sub->add_option("RUN_DIR", state_dir_, "The run directory, or its state.json")->required();
    sub->add_flag("--json", json_, "Print it as one JSON object");
    return sub;
  }

  int run() override { return print(deployment_status(state_dir_, json_)); }

 private:
  std::string state_dir_;
  bool json_ = false;
};

class Down : public Subcommand {
 public:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "down", "Stop what `up` started (the stream ends and drains, as a Ctrl-C of run),\n"
                "remove its hosts, gather the summaries and print the report, as run does");
    sub->add_option("RUN_DIR", state_dir_, "The run directory, or its state.json")->required();
    sub->add_flag("--json", json_, "Print the report as one JSON object");
    sub->add_flag("--now", now_, "Stop the processes at once (SIGTERM) rather than drain the stream");
    sub->add_option("--wait", wait_s_,
                    "Seconds to wait for the supervisor before it is killed and down stops\n"
                    "what is left itself")
        ->check(seconds_validator())
        ->capture_default_str();
    return sub;
  }

  int run() override { return print(down_deployment(state_dir_, now_, json_, wait_s_)); }

 private:
  std::string state_dir_;
  bool json_ = false;
  bool now_ = false;
  double wait_s_ = 60;
};

}  // namespace

std::unique_ptr<Subcommand> status_command() { return std::make_unique<StatusCommand>(); }
std::unique_ptr<Subcommand> down_command() { return std::make_unique<Down>(); }

}  // namespace sluice::cli
