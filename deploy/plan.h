// deploy/: sluice-deploy; may include every folder below it.
//
// `sluice-deploy plan`: what run would do, and nothing of it: the commands
// the executor runs to make the hosts, then in start order each process's
// host, the exact command line (from the executor, as run gets it), the
// addresses and ports it listens on, its metrics URL, log and summary.
// The commands come from the executor run uses (Executor::command,
// Executor::up_steps), so the plan and the run cannot disagree.
#pragma once

#include <string>
#include <vector>

#include "deploy/executor.h"
#include "deploy/launcher.h"

namespace sluice {

struct PlannedProcess {
  std::string name, role, where;
  std::vector<std::string> command;
  std::vector<std::string> listens;  // "ADDRESS:PORT (from UPSTREAM[, instance K])"
  std::string metrics_url;           // "" with metrics: off
  std::string log, summary;
  // An application's end (role publisher or subscriber): not started, so
  // no command, log or listens of its own; how it connects.
  std::string connect;
};

struct Plan {
  std::string file, preset, launcher;
  size_t process_count = 0;
  std::string run_dir;
  bool run_dir_named = false;  // given (--run-dir), not a new one each time
  std::vector<Executor::Step> host_steps;
  std::vector<PlannedProcess> processes;  // in start order
  std::string cannot_run;  // why run would stop before it starts here ("" it would not)
};

Plan make_plan(const Deployment& d, const Programs& programs, const Executor& ex,
               const std::string& run_dir);
std::string plan_text(const Plan& p);
std::string plan_json(const Plan& p);

}  // namespace sluice
