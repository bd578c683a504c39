// status and down: a deployment that `up` (or `run`) started, reached
// through its run directory's state.json (session.h).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "deploy/cli.h"
#include "deploy/session.h"

namespace sluice::cli {
namespace {

// With --json a failure that printed nothing (no state.json there) is an
// object too, carrying the error.
int print(const SessionResult& res, bool json) {
  if (json && res.out.empty() && !res.err.empty()) {
    std::string e = res.err;
    if (e.rfind("sluice-deploy: ", 0) == 0) e.erase(0, 15);
    while (!e.empty() && e.back() == '\n') e.pop_back();
    fmt::print("{}\n", nlohmann::ordered_json{{"ok", false}, {"error", e}}.dump());
  }
  fmt::print("{}", res.out);
  std::fflush(stdout);
  fmt::print(stderr, "{}", res.err);
  return res.exit_code;
}

// No run directory, or two: a bad option.
int no_run_dir(const Status& st, bool json) {
  fmt::print(stderr, "sluice-deploy: {}\n", st.message());
  if (json) fmt::print("{}\n", nlohmann::ordered_json{{"ok", false}, {"error", st.message()}}.dump());
  return kBadInput;
}

class StatusCommand : public Subcommand {
 public:
  ExitCodes exit_codes() const override {
    return {"no process has failed (each is running or exited 0), and the supervisor is alive or "
            "the run is down and succeeded",
            "a process failed or was killed (not one whose restart is due), the run is down and "
            "failed, or its supervisor is gone before down",
            "a bad option; no state.json in the run directory"};
  }

  int run() override {
    std::string dir;
    if (Status st = run_dir_.get(&dir); !st) return no_run_dir(st, json_);
    return print(deployment_status(dir, json_), json_);
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "status", "Each process of a run that `up` (or `run`) started: running, exited with its\n"
                  "code, or killed by a signal, and its host");
    run_dir_.declare(sub, "The run directory, or its state.json");
    add_json_flag(sub, &json_, "it");
    return sub;
  }

 private:
  RunDirArg run_dir_;
  bool json_ = false;
};

class Down : public Subcommand {
 public:
  ExitCodes exit_codes() const override {
    return {"the run succeeded, as run's 0",
            "the run failed, as run's 1, or its supervisor was gone (down then stopped what was "
            "left itself)",
            "a bad option; no state.json in the run directory"};
  }

  int run() override {
    std::string dir;
    if (Status st = run_dir_.get(&dir); !st) return no_run_dir(st, json_);
    return print(down_deployment(dir, now_, json_, wait_s_), json_);
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "down", "Stop what `up` started (the stream ends and drains, as a Ctrl-C of run),\n"
                "remove its hosts, gather the summaries and print the report, as run does");
    run_dir_.declare(sub, "The run directory, or its state.json");
    add_json_flag(sub, &json_, "the report");
    sub->add_flag("--now", now_, "Stop the processes at once (SIGTERM) rather than drain the stream");
    sub->add_option("--wait", wait_s_,
                    "Seconds to wait for the supervisor before it is killed and down stops\n"
                    "what is left itself")
        ->check(seconds_validator())
        ->capture_default_str();
    return sub;
  }

 private:
  RunDirArg run_dir_;
  bool json_ = false;
  bool now_ = false;
  double wait_s_ = 60;
};

}  // namespace

std::unique_ptr<Subcommand> status_command() { return std::make_unique<StatusCommand>(); }
std::unique_ptr<Subcommand> down_command() { return std::make_unique<Down>(); }

}  // namespace sluice::cli
