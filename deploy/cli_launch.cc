// plan, run and up: a deployment read with its overrides, its launcher
// chosen, its hosts mapped (slurm), its executor made; then plan prints what
// run would do, run does it and waits, up does it and returns.
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "deploy/cli.h"
#include "deploy/launcher.h"
#include "deploy/plan.h"
#include "deploy/predict.h"
#include "deploy/prometheus.h"
#include "deploy/session.h"
#include "deploy/slurm.h"
#include "graph/config.h"
#include "graph/registry.h"

namespace sluice::cli {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

// A run's name for its snapshots: when, which supervisor, and 32 random bits
// (two runs started in one second by one pid are not told apart otherwise).
std::string new_run_id() {
  std::random_device rd;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &utc);
  return fmt::format("{}-{}-{:08x}", when, getpid(), rd());
}

// What plan, run and up share: the options that say how and where the
// processes start, and the steps before they differ.
class LaunchCommand : public Subcommand {
 protected:
  // --launcher: one of the registry's launchers (graph/registry.h).
  void declare_launcher(CLI::App* sub, const std::string& help) {
    std::vector<std::string> names;
    for (const Launcher& l : launchers()) names.push_back(l.name);
    sub->add_option("--launcher", launcher_, help)->check(CLI::IsMember(names));
  }

  // A failure before anything started: said on stderr, and with --json as
  // a report that carries the error (plan: an object with the error).
  int fail(const Status& st, const std::string& preset = "") {
    fmt::print(stderr, "sluice-deploy: {}\n", st.message());
    if (json_ && !reports_) {
      fmt::print("{}\n", nlohmann::ordered_json{{"deployment", args_.file}, {"ok", false},
                                                {"error", st.message()}}
                              .dump());
    } else if (json_) {
      RunReport r;
      r.deployment = args_.file;
      r.preset = preset;
      r.error = st.message();
      fmt::print("{}\n", report_json(r));
    }
    return kBadInput;
  }

  // Reads the file, applies --launcher, gives slurm hosts their nodes'
  // addresses (asking for an allocation first with --slurm-args), names the
  // run and makes its executor. Returns an exit code when it cannot go on,
  // else -1; `executor_status` is make_executor's.
  int prepare(Deployment* d, std::unique_ptr<Executor>* executor, Status* executor_status) {
    if (Status st = load_deployment(args_.file, args_.sets, d); !st) return fail(st);
    for (const std::string& w : d->warnings) fmt::print(stderr, "sluice-deploy: warning: {}\n", w);
    if (!launcher_.empty()) d->launcher = launcher_;
    // slurm: each host takes the address of the node it maps to, before
    // anything is resolved, so resolved.yaml and every process agree. Without
    // an allocation the file is left as it is, and the executor's check says
    // why it cannot run.
    // --slurm-args: an allocation of our own, released when the run ends.
    if (d->launcher == "slurm" && slurm_args_opt_ && slurm_args_opt_->count() > 0 &&
        !getenv("SLURM_JOB_ID") && !d->hosts.empty()) {
      const size_t nodes = slurm_nodes_needed(*d);
      // Named after the run, so `down` finds it even if up's supervisor died.
      if (run_dir_.empty()) run_dir_ = default_run_dir();
      const std::string name = slurm_job_name(run_dir_);
      fmt::print(stderr, "sluice-deploy: slurm: salloc --no-shell --nodes={} --job-name={} {}\n",
                 nodes, name, slurm_args_);
      if (Status st = slurm_allocate(nodes, name, slurm_args_, &own_allocation_.job); !st) {
        fmt::print(stderr, "sluice-deploy: {}\n", st.message());
        return kBadInput;
      }
      fmt::print(stderr, "sluice-deploy: slurm: job {} (cancelled when the run ends)\n",
                 own_allocation_.job);
      setenv("SLURM_JOB_ID", own_allocation_.job.c_str(), 1);
      unsetenv("SLURM_JOB_NODELIST");
      // The executor that ends the run (this one, or up's supervisor's)
      // cancels it when it removes the hosts.
      setenv("SLUICE_SLURM_OWN_JOB", own_allocation_.job.c_str(), 1);
    }
    if (d->launcher == "slurm" && !d->hosts.empty()) {
      SlurmAllocation alloc;
      std::map<std::string, size_t> nodes;
      if (slurm_allocation(&alloc) && slurm_map_hosts(*d, alloc, &nodes)) {
        std::vector<std::string> with = args_.sets;
        for (auto& s : slurm_address_overrides(*d, alloc, nodes)) with.push_back(s);
        Deployment mapped;
        if (Status st = load_deployment(args_.file, with, &mapped); !st) {
          fmt::print(stderr, "sluice-deploy: {} on the nodes of Slurm job {}: {}\n", args_.file,
                     alloc.job_id, st.message());
          return kBadInput;
        }
        mapped.launcher = "slurm";
        *d = std::move(mapped);
      }
    }
    // One name per run, kept by its restarts (they read the same
    // resolved.yaml): a snapshot from an earlier run in the same run
    // directory or state_dir is passed over, not restored.
    if (d->run_id.empty()) d->run_id = new_run_id();
    *executor_status = make_executor(*d, stderr, executor);
    return -1;
  }

  // run and up: prepare, then ready. Returns an exit code when the run
  // cannot start, else -1.
  int start(Deployment* d, std::unique_ptr<Executor>* executor, LaunchOptions* opts) {
    Status st;
    if (int rc = prepare(d, executor, &st); rc >= 0) return rc;
    return ready(d, executor->get(), st, opts);
  }

  // The executor can start here, --prometheus can reach the processes, the
  // programs are found and the run directory is free. Fills opts; returns an
  // exit code when it cannot go on, else -1.
  int ready(Deployment* d, Executor* executor, Status st, LaunchOptions* opts) {
    if (st) st = executor->check();
    if (!st) return fail(st, d->preset);
    opts->prometheus = prometheus_;
    opts->prometheus_rules = prometheus_rules_;
    if (std::filesystem::is_directory(prometheus_consoles_)) opts->prometheus_consoles = prometheus_consoles_;
    if (prometheus_ && d->launcher != "local") {
      fmt::print(stderr,
                 "sluice-deploy: --prometheus runs the server in this network namespace, which "
                 "cannot reach the hosts of the {} launcher; use --launcher local, or point a "
                 "Prometheus inside the hosts' network at their metrics_url\n",
                 d->launcher);
      return kBadInput;
    }
    if (prometheus_ && !d->metrics) {
      fmt::print(stderr, "sluice-deploy: --prometheus scrapes the processes' metrics, and {} sets "
                         "metrics: off\n", d->file);
      return kBadInput;
    }
    if (prometheus_ && d->metrics_port == 0) {
      // Prometheus must know every target before the processes start (it
      // takes up to 5 s to apply targets it discovers): the run gets ports.
      d->metrics_port = free_ports("0.0.0.0", d->processes.size());
      if (d->metrics_port == 0) {
        fmt::print(stderr, "sluice-deploy: --prometheus: no {} consecutive free ports for the "
                           "processes' metrics; set metrics_port\n", d->processes.size());
        return kBadInput;
      }
    }
    // The live table, on a terminal only: never into a file, a pipe or --json.
    opts->live_table = !json_ && d->metrics && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
    opts->executor = executor;
    opts->run_dir = run_dir_;
    opts->timeout_s = timeout_s_;
    opts->stop_signal = &g_stop_signal;
    st = find_programs(bin_dir_, &opts->programs);
    if (st) st = check_run_dir_free(run_dir_);
    if (!st) return fail(st, d->preset);
    return -1;
  }

  // The options run and up both take.
  void declare_run_options(CLI::App* sub, bool up) {
    args_.declare(sub);
    add_json_flag(sub, &json_, up ? "the status" : "the report");
    sub->add_option("--run-dir", run_dir_,
                    up ? "As for run"
                       : "Where resolved.yaml, NAME.log and NAME.json go (default: "
                         "./runs/<YYYYmmdd-HHMMSS>-<pid>);\nrefused while a run there is not down; "
                         "used again, it starts afresh")
        ->type_name("DIR");
    sub->add_option("--bin-dir", bin_dir_,
                    up ? "As for run"
                       : "Directory holding sluice-loadgen, sluice-node and sluice-sink (default: the\n"
                         "build folders beside this program: ../loadgen, ../node, ../sink, or its own)");
    sub->add_option("--timeout", timeout_s_,
                    up ? "As for run: past it the supervisor stops the processes"
                       : "Seconds before the run is stopped and fails (default: duration_s + 60, or\n"
                         "120 when `tuples` is set)")
        ->check(seconds_validator());
  }

  FileArgs args_;
  std::string run_dir_, bin_dir_, launcher_;
  bool json_ = false;
  bool reports_ = true;  // run and up print a run's report; plan does not
  double timeout_s_ = 0;
  std::string slurm_args_;
  CLI::Option* slurm_args_opt_ = nullptr;
  bool prometheus_ = false;
  std::string prometheus_rules_ = SLUICE_SOURCE_DIR "/deploy/prometheus/sluice.rules.yml";
  std::string prometheus_consoles_ = SLUICE_SOURCE_DIR "/deploy/prometheus/consoles";
  // --slurm-args: the allocation this command asked for, cancelled when it
  // returns unless up hands it to its supervisor.
  struct Release {
    std::string job;
    ~Release() { slurm_release(job); }
  } own_allocation_;
};

std::string launcher_help() {
  std::string h = "How the processes are started, over the file's `launcher` (default local):";
  for (const Launcher& l : launchers()) h += fmt::format("\n  {}: {}", l.name, l.summary);
  return h;
}

class Plan : public LaunchCommand {
 public:
  Plan() { reports_ = false; }

  ExitCodes exit_codes() const override {
    return {"printed, and run could start here", "",
            "as validate; also the programs not found, or a launcher that cannot run here "
            "(said after the plan)"};
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "plan",
        "Print what `run` would do, and do none of it: the commands that make the hosts,\n"
        "then in start order each process's host, command line, ports, log and summary");
    args_.declare(sub);
    declare_launcher(sub, launcher_help());
    sub->add_option("--run-dir", run_dir_, "As for run")->type_name("DIR");
    add_json_flag(sub, &json_, "the plan (with --predict, the prediction)");
    sub->add_flag("--predict", predict_,
                  "Instead of the plan, print the cost model's prediction: tuples/s, and CPE_p per\n"
                  "process (experiments/costmodel.py; coefficients from --calibration)");
    sub->add_option("--calibration", calibration_,
                    "The cost model's coefficients, as experiments/reproduce.py writes them")
        ->capture_default_str();
    sub->add_option("--bin-dir", bin_dir_, "As for run");
    return sub;
  }

 public:
  int run() override {
    Deployment d;
    std::unique_ptr<Executor> executor;
    Status st;
    if (int rc = prepare(&d, &executor, &st); rc >= 0) return rc;
    if (predict_) {
      Calibration cal;
      Prediction pred;
      st = load_calibration(calibration_, &cal);
      if (st) st = predict(d, cal, &pred);
      if (!st) return fail(st);
      fmt::print("{}", json_ ? prediction_json(d, cal, pred) + "\n" : prediction_text(d, cal, pred));
      return kOk;
    }
    Programs programs;
    if (st) st = find_programs(bin_dir_, &programs);
    if (!st) return fail(st);
    sluice::Plan plan = make_plan(d, programs, *executor, run_dir_);
    // A launcher that cannot run here is said after the plan, as run would.
    const Status cs = executor->check();
    if (!cs) plan.cannot_run = cs.message();
    fmt::print("{}", json_ ? plan_json(plan) + "\n" : plan_text(plan));
    std::fflush(stdout);
    if (!cs) {
      fmt::print(stderr, "sluice-deploy: run would stop before it starts: {}\n", cs.message());
      return kBadInput;
    }
    return kOk;
  }

 private:
  bool predict_ = false;
  std::string calibration_ = SLUICE_SOURCE_DIR "/experiments/calibration.json";
};

class Run : public LaunchCommand {
 public:
  ExitCodes exit_codes() const override {
    return {"every process succeeded and the sinks counted no lost, duplicated or corrupt tuple",
            "a process failed, did not start or was killed; the run timed out or was stopped "
            "(SIGTERM, a second Ctrl-C); the sinks counted lost, duplicated or corrupt tuples; "
            "the launcher could not make or remove its hosts",
            "as plan (netns without root's capabilities, a host address the local launcher "
            "lacks, slurm outside an allocation or with fewer nodes than hosts), or a run "
            "directory that a run not yet down still owns"};
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "run",
        "Start every process on its host (sinks first, loadgens last; with the local\n"
        "launcher every host is this one), each in its own process group with its log in\n"
        "the run directory; wait; remove what the launcher made; print a report");
    declare_run_options(sub, false);
    declare_launcher(sub, launcher_help());
    slurm_args_opt_ = sub->add_option(
        "--slurm-args", slurm_args_,
        "With --launcher slurm outside an allocation: ask Slurm for one first, `salloc\n"
        "--no-shell --nodes=<hosts> --job-name=sluice-<run> ARGS` (e.g. \"--exclusive\n"
        "--time=10\"), run in it, and scancel it at the end");
    sub->add_flag("--prometheus", prometheus_,
                  "Also start a Prometheus server (Debian's `prometheus`) scraping every process\n"
                  "each second, with sluice's recording rules; its data in RUN/prometheus. The\n"
                  "report adds what it recorded per process (CPE_p, CPE_s, Gb/s). Local launcher\n"
                  "only: netns hosts cannot be reached from this namespace");
    sub->add_option("--prometheus-rules", prometheus_rules_, "Recording rules for --prometheus")
        ->capture_default_str();
    return sub;
  }

 public:
  int run() override {
    Deployment d;
    std::unique_ptr<Executor> executor;
    LaunchOptions opts;
    if (int rc = start(&d, &executor, &opts); rc >= 0) return rc;
    // The run keeps RUN/state.json too, so `status` and `down` reach it.
    opts.on_change = write_state;

    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);

    RunReport r = run_deployment(d, opts);
    write_final(r);
    if (json_) {
      fmt::print("{}\n", report_json(r));
      if (!r.ok) fmt::print(stderr, "sluice-deploy: {}\n", r.error);
    } else {
      fmt::print("{}", report_table(r));
    }
    std::fflush(stdout);
    return r.ok ? kOk : kRunFailed;
  }
};

// up / status / down: a deployment that outlives this program (session.h).
class Up : public LaunchCommand {
 public:
  ExitCodes exit_codes() const override {
    return {"every process started; the run goes on",
            "it did not come up (stopped and removed again; its report printed)",
            "as run, or the run directory cannot be made"};
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "up",
        "As run, but return once every process has started, leaving them running under a\n"
        "supervisor (RUN/supervisor.log) that records them in RUN/state.json and keeps\n"
        "the hosts until `down --run-dir RUN`");
    declare_run_options(sub, true);
    slurm_args_opt_ = sub->add_option("--slurm-args", slurm_args_,
                                      "As for run; the allocation is cancelled by `down`");
    declare_launcher(sub, "As for run");
    return sub;
  }

 public:
  int run() override {
    Deployment d;
    std::unique_ptr<Executor> executor;
    LaunchOptions opts;
    if (int rc = start(&d, &executor, &opts); rc >= 0) return rc;
    opts.executor = nullptr;  // the supervisor makes its own
    SessionResult res = up_deployment(d, opts, json_);
    if (res.exit_code == 0) own_allocation_.job.clear();  // the supervisor's now, until down
    fmt::print("{}", res.out);
    std::fflush(stdout);
    fmt::print(stderr, "{}", res.err);
    return res.exit_code;
  }
};

}  // namespace

std::unique_ptr<Subcommand> plan_command() { return std::make_unique<Plan>(); }
std::unique_ptr<Subcommand> run_command() { return std::make_unique<Run>(); }
std::unique_ptr<Subcommand> up_command() { return std::make_unique<Up>(); }

}  // namespace sluice::cli
