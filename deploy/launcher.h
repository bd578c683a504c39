// deploy/: sluice-deploy; may include every folder below it.
//
// The launcher: runs a deployment's processes, on their hosts through an
// executor (executor.h: local, netns), and gathers what each one measured
// into one report.
//
//   1. find_programs(): sluice-loadgen, sluice-node and sluice-sink, by role.
//   2. run_deployment(): makes the run directory, writes resolved.yaml (every
//      child reads that one file), has the executor make the hosts (up), then
//      starts the processes through it downstream first
//      (Deployment::start_order: sinks first, load generators last), so every
//      listener is up before its upstream connects. Each child runs in its own process
//      group with stdout and stderr in <run>/NAME.log.
//   3. It waits. The first child that exits non-zero or by a signal, a
//      timeout, or a stop signal ends the run: the others get SIGTERM, then
//      SIGKILL after a grace period, and nothing is left running. A process
//      that dies takes its neighbours down a moment later, and the run names
//      the one that died, not them: the first killed by a signal, else the
//      one whose log has the earliest error (judged 300 ms after the first
//      failure, so a node still tearing down after its error is named rather
//      than the sink that exited on its EOF), else the first to exit.
//   4. The executor removes what it made (down). It reads
//      <run>/NAME.json (ProcessSummary) of every process; the sinks'
//      counts, added up, make the pipeline line. A run is ok only if every process
//      succeeded and the sink counted no lost, duplicated or corrupt tuple.
//   5. report_table() / report_json() print it.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "deploy/executor.h"
#include "deploy/prometheus.h"
#include "graph/config.h"
#include "node/metrics.h"
#include "base/status.h"

namespace sluice {

// The program each role runs.
struct Programs {
  std::string loadgen, node, sink;
  const std::string& of(Role r) const {
    return r == Role::kLoadgen ? loadgen : r == Role::kSink ? sink : node;
  }
};

// bin_dir non-empty: all three must be in it. Empty: each is looked for beside
// this executable's build folder (<self>/../loadgen, ../node, ../sink, <self>).
Status find_programs(const std::string& bin_dir, Programs* out);

struct RunReport;

struct LaunchOptions {
  std::string run_dir;            // "": ./runs/<YYYYmmdd-HHMMSS>-<pid>
  Programs programs;
  double timeout_s = 0;           // 0: default_timeout_s()
  double grace_s = 3;             // SIGTERM -> SIGKILL
  double progress_period_s = -1;  // progress lines on `progress`: <0: 1 s on a TTY else 5 s; 0: none
  std::FILE* progress = stderr;
  // On a terminal: instead of progress lines, a table of each process's
  // tuples/s, Gb/s and CPE redrawn in place each second (progress.h).
  bool live_table = false;
  // Set (to a signal number) by the caller's signal handler: the launcher
  // forwards that signal to every child and stops the run.
  const volatile std::sig_atomic_t* stop_signal = nullptr;
  // How the processes are started (executor.h); nullptr: the one the
  // deployment's `launcher` names, made for this run.
  Executor* executor = nullptr;
  // --prometheus: a Prometheus server scrapes every process (prometheus.h),
  // with these recording rules and console templates ("" = none).
  bool prometheus = false;
  std::string prometheus_rules, prometheus_consoles;
  // Told of the run as it goes, with its phase: "starting" (the hosts are
  // made), "running" (every process started, and again as each exits),
  // "ended" (every process has ended; the hosts are still up). `up` and
  // `run` keep the run directory's state.json with it (session.h).
  std::function<void(const RunReport&, const char* phase)> on_change;
  // Called after "ended", before the launcher removes the hosts and the
  // summaries are gathered: `up`'s supervisor waits there for `down`.
  std::function<void()> hold;
};

// 120 s when sending a fixed number of tuples, else duration_s + 60.
double default_timeout_s(const Deployment& d);

// restart: on-failure: the wait before restart number `attempt` (1, 2, ...),
// in seconds: restart_backoff_ms, doubled per attempt, at most 10 s.
double restart_backoff_s(const Deployment& d, uint32_t attempt);

struct ProcessOutcome {
  std::string name;
  Role role = Role::kNode;
  std::string host;   // the host it ran on: its name in `hosts:`, else its address
  std::string where;  // the host in words, from the executor: address, namespace, cpus
  std::string node;   // slurm: the node it ran on (Executor::node); "" for the others
  pid_t pid = -1;
  uint64_t start_ticks = 0;  // field 22 of /proc/PID/stat: with pid, names this process alone
  bool running = false;      // started and not yet seen to exit
  int exit_code = -1;        // once exited: its code, or -1 when killed by a signal
  int term_signal = 0;       // the signal that killed it
  bool stopped = false;  // still running when sluice-deploy stopped the run
  // restart: on-failure: how many times the supervisor started it again, and
  // when (seconds after the run's processes were all started).
  uint32_t restarts = 0;
  // Dead with a restart planned: when it is due (CLOCK_REALTIME seconds;
  // 0: none planned), for `status`.
  double restart_due_wall_s = 0;
  std::vector<double> restarted_at_s;
  // Per restart, in CLOCK_REALTIME seconds (the clock of the sink's
  // summary): when its death was seen and when it was started again; and
  // the recovery's time, from the death to the first tuple at a sink after
  // the restart (a restarted sink: its own first event), -1 where no sink's
  // pauses tell it (fill_report, deploy/report.cc).
  std::vector<double> died_wall_s, restarted_wall_s, recovery_s;
  bool ok = false;
  std::string error;
  // restart: on-failure: it died (or, restarted, still ran) after every sink
  // had ended its stream, and was let go: what it did not finish, nobody
  // needs (the sinks' accounts are whole); why, in words. Not a failure.
  std::string settled;
  std::string log_path;
  std::string summary_path;
  bool have_summary = false;
  ProcessSummary summary;
};

struct RunReport {
  std::string deployment;  // the file as given
  std::string preset;
  std::string run_dir;
  std::string launcher;                 // the executor's name
  std::vector<std::string> namespaces;  // what it made that `ip netns del` removes
  bool ok = false;
  std::string error;
  std::vector<ProcessOutcome> processes;  // in the file's order
  std::vector<std::string> started;       // names in the order they were started

  // The pipeline, as its sinks saw it (added up over every sink).
  uint64_t tuples = 0;
  double tuples_per_s = 0, gbps = 0;
  uint64_t lost = 0, duplicated = 0, corrupt = 0, filtered = 0;
  uint64_t aggregated = 0, joined = 0;  // taken out upstream by operators (END accounts)
  // Sent by key splits to other sinks than each one counting (END accounts):
  // each sink counts what it did not get, so with a split over n sinks a
  // tuple is counted by n - 1 of them; `tuples` adds up every sink's.
  uint64_t partitioned = 0;
  uint64_t replayed = 0, deduplicated = 0, reconnects = 0;  // acks: see ProcessSummary
  uint64_t rejected = 0;  // records the sources of records left out (bad_records: reject)
  double latency_p50_us = 0, latency_p99_us = 0, latency_max_us = 0;
  // Cycles per event of the node processes together (the links and the
  // operators: what the pipeline's data path costs) and of the endpoints
  // (load generators and sinks: making and checking the tuples) together,
  // each their cycles (user + system, at each one's clock) over their events
  // in + out, a process's CPE_p and CPE_s in one figure per side; and the
  // endpoints' part of the processes' CPU time.
  double cpe_p_nodes = 0, cpe_s_nodes = 0, cpe_p_endpoints = 0, cpe_s_endpoints = 0;
  double endpoints_cpu_share = 0;

  // --prometheus: the server, and per process what it recorded.
  std::string prometheus_url;
  std::map<std::string, PrometheusFigures> prometheus;
};

RunReport run_deployment(const Deployment& d, const LaunchOptions& opts);

// The arguments every program gets: the resolved file, its name, where its
// summary goes.
std::vector<std::string> process_args(const std::string& resolved, const std::string& name,
                                      const std::string& summary);

// The pipeline's figures (tuples, lost, CPE, ...) from the sinks' and every
// process's summaries, and each restart's recovery_s (deploy/report.cc).
void fill_report(RunReport* r);
// One JSON object (field names are relied on by experiments/ tools).
std::string report_json(const RunReport& r);
// A table, one row per process, then the pipeline line and the verdict.
std::string report_table(const RunReport& r);

// Field 22 of /proc/PID/stat (when the process started, in clock ticks
// since boot), 0 if there is no such process: a pid with its start time
// names one process even after the pid is reused.
uint64_t process_start_ticks(pid_t pid);

// The last line of a log that looks like an error, else its last non-empty line.
std::string last_error_line(const std::string& log_path);

// A whole file; *ok false (and "") when it cannot be read.
std::string read_file(const std::string& path, bool* ok);

// runs/<local time>-<pid>: a run directory of its own.
std::string default_run_dir();

}  // namespace sluice
