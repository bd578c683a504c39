// deploy/: sluice-deploy; may include every folder below it.
//
// A deployment that outlives the sluice-deploy that started it: the verbs
// `up`, `status` and `down`, and the run directory's state.json they share
// with `run`.
//
//   up      forks a supervisor (its own session, its output in
//           RUN/supervisor.log) that does what `run` does with the same code
//           (run_deployment): makes the hosts, starts the processes, waits
//           for them, then holds the hosts until `down`. `up` returns once
//           every process started (or failed to), leaving them running.
//   status  reads RUN/state.json: each process running, exited with its
//           code, or killed by a signal, on its host.
//   down    signals the supervisor (SIGINT: the stream ends and drains, as a
//           Ctrl-C of `run`; --now: SIGTERM, stopped at once), waits for it
//           to stop the processes, remove the hosts and gather the results
//           (RUN/report.json, RUN/report.txt), and prints them.
//
// Why a supervisor rather than pids alone: an exit status is only told to
// the parent (waitpid), so only a process that stays the parent can say
// "exited with code 1" or "killed by signal 9"; the ssh launcher's clients
// stream the logs and must keep running; and the netns namespaces belong
// to the run until it is down. The supervisor keeps the same pidfd/epoll
// watch as `run`, so the first failure still ends the run and is named.
// state.json records the supervisor's and every process's pid with its
// start time (/proc/PID/stat field 22), so `status` and `down` tell a live
// process from a reused pid, and `down` stops what is left (process groups,
// namespaces) even when the supervisor was killed.
#pragma once

#include <string>

#include "deploy/launcher.h"

namespace sluice {

// Writes RUN/state.json (atomically: a temporary file renamed over it) from
// the run as it stands: the run id, launcher, this process as the
// supervisor, the phase, the namespaces, and per process its host, pid,
// start time, state, log, summary and metrics URL. "down" is the last phase:
// the hosts are removed and `ok`/`error` are the run's.
void write_state(const RunReport& r, const char* phase);

// After a run (by `run` or by up's supervisor): RUN/report.json and
// RUN/report.txt, the report as --json and as the table print it, and
// state.json in phase "down".
void write_final(const RunReport& r);

// Before `run` or `up` writes into run_dir: an error when a run that is
// not down still owns it (its supervisor, or any of its processes, alive:
// state.json says which, with start times). A second `up` there wrote its
// state over the first's, and the first's supervisor, holding its hosts,
// was then out of reach of `status` and `down`.
Status check_run_dir_free(const std::string& run_dir);

// Exit codes of the three verbs, as docs/RUNNING.md's table says.
struct SessionResult {
  int exit_code = 0;
  std::string out;  // for stdout
  std::string err;  // for stderr ("" none)
};

// `up`: d checked (the executor's check() passed) and opts filled as for
// run (programs, timeout, run_dir; executor and stop_signal are made in the
// supervisor). Returns once every process started: 0 (the deployment is up),
// 1 (it did not come up: the supervisor stopped and removed what it had
// started, and `out` holds its report), 2 (the run directory cannot be made).
SessionResult up_deployment(const Deployment& d, LaunchOptions opts, bool json);

// `status RUN_DIR|STATE_FILE`: 0 when no process has failed (each running,
// or exited 0) and the supervisor is alive or the run is down and ok; 1 when
// a process failed or was killed, the run is down and failed, or the
// supervisor is gone while the run is not down; 2 when there is no state.
SessionResult deployment_status(const std::string& where, bool json);

// `down RUN_DIR|STATE_FILE`: 0 when the run succeeded (as run's 0), 1 when
// it failed or the supervisor was gone (down then stops the processes and
// removes the namespaces state.json names itself), 2 when there is no
// state. `wait_s`: how long to wait for the supervisor before it is killed.
SessionResult down_deployment(const std::string& where, bool now, bool json, double wait_s);

}  // namespace sluice
