// sluice-deploy: check a deployment file, or run its graph on its hosts (this
// one, or network namespaces) and report what every process measured.
#include <signal.h>
#include <unistd.h>

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "deploy/k8s.h"
#include "deploy/launcher.h"
#include "deploy/predict.h"
#include "deploy/session.h"
#include "deploy/slurm.h"
#include "graph/config.h"
#include "graph/config_doc.h"

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

// Exit codes, as --help and docs/RUNNING.md tell them.
constexpr int kOk = 0;
constexpr int kRunFailed = 1;
constexpr int kBadInput = 2;

// --timeout: a finite number of seconds above 0. (CLI::PositiveNumber would
// say "not in range 2.22507e-308 to" a 309-digit number.)
std::string check_timeout(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0)
    return fmt::format("must be a positive number of seconds, got {}", text);
  return {};
}

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

}  // namespace

int main(int argc, char** argv) {
  using namespace sluice;
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

  std::string file;
  std::vector<std::string> sets;
  bool json = false;
  std::string run_dir, bin_dir, launcher;
  double timeout_s = 0;

  auto add_common = [&](CLI::App* sub) {
    sub->add_option("FILE.yaml", file, "The deployment file")->required();
    sub->add_option("--set", sets,
                    "Override a key, as KEY=VALUE (repeatable). KEY is a top-level key or a\n"
                    "dotted path (processes.1.host); VALUE is read as YAML. Overrides beat\n"
                    "the file and the preset, and are checked like the file.")
        ->allow_extra_args(false)
        ->type_name("KEY=VALUE");
  };

  CLI::App* check = app.add_subcommand(
      "validate",
      "Parse and validate FILE.yaml with the overrides; print the graph (links, unions,\n"
      "splits) and every key resolved. `check` is the same");
  check->alias("check");
  add_common(check);

  CLI::App* plan = app.add_subcommand(
      "plan",
      "Print what `run` would do, and do none of it: the commands that make the hosts,\n"
      "then in start order each process's host, command line, ports, log and summary");
  add_common(plan);

  CLI::App* run = app.add_subcommand(
      "run",
      "Start every process on its host (sinks first, loadgens last; with the local\n"
      "launcher every host is this one), each in its own process group with its log in\n"
      "the run directory; wait; remove what the launcher made; print a report");
  add_common(run);
  run->add_flag("--json", json, "Print the report as one JSON object on stdout instead of a table");
  run->add_option("--run-dir", run_dir,
                  "Where resolved.yaml, NAME.log and NAME.json go (default: "
                  "./runs/<YYYYmmdd-HHMMSS>-<pid>);\nrefused while a run there is not down; "
                  "used again, it starts afresh");
  run->add_option("--bin-dir", bin_dir,
                  "Directory holding sluice-loadgen, sluice-node and sluice-sink (default: the\n"
                  "build folders beside this program: ../loadgen, ../node, ../sink, or its own)");
  run->add_option("--timeout", timeout_s,
                  "Seconds before the run is stopped and fails (default: duration_s + 60, or\n"
                  "120 when `tuples` is set)")
      ->check(CLI::Validator(check_timeout, "SECONDS"));
  for (CLI::App* sub : {run, plan}) {
    sub->add_option("--launcher", launcher,
                    "How the processes are started, over the file's `launcher` (default local):\n"
                    "local (all on this host), netns (each host of `hosts:` in a network\n"
                    "namespace of its own, joined by a bridge; needs root), ssh (each process\n"
                    "on its host over ssh: ssh_key, ssh_options, remote_dir, copy_binaries) or\n"
                    "slurm (inside an allocation, SLURM_JOB_ID set: each process a job step on\n"
                    "the node its host maps to, in order, at the node's address)")
        ->check(CLI::IsMember({"local", "netns", "ssh", "slurm"}));
  }
  std::string slurm_args;
  CLI::Option* slurm_args_opt = run->add_option(
      "--slurm-args", slurm_args,
      "With --launcher slurm outside an allocation: ask Slurm for one first, `salloc\n"
      "--no-shell --nodes=<hosts> --job-name=sluice-<run> ARGS` (e.g. \"--exclusive\n"
      "--time=10\"), run in it, and scancel it at the end");
  plan->add_option("--run-dir", run_dir, "As for run");
  bool predict_flag = false;
  std::string calibration_path = std::string(SLUICE_SOURCE_DIR) + "/experiments/calibration.json";
  plan->add_flag("--predict", predict_flag,
                 "Instead of the plan, print the cost model's prediction: tuples/s, and CPE_p per\n"
                 "process (experiments/costmodel.py; coefficients from --calibration)");
  plan->add_option("--calibration", calibration_path,
                   "The cost model's coefficients, as experiments/reproduce.py writes them")
      ->capture_default_str();

  // up / status / down: a deployment that outlives this program (session.h).
  CLI::App* up = app.add_subcommand(
      "up",
      "As run, but return once every process has started, leaving them running under a\n"
      "supervisor (RUN/supervisor.log) that records them in RUN/state.json and keeps\n"
      "the hosts until `down RUN`");
  add_common(up);
  up->add_flag("--json", json, "Print the status as one JSON object");
  up->add_option("--run-dir", run_dir, "As for run");
  up->add_option("--bin-dir", bin_dir, "As for run");
  up->add_option("--timeout", timeout_s, "As for run: past it the supervisor stops the processes")
      ->check(CLI::Validator(check_timeout, "SECONDS"));
  CLI::Option* up_slurm_args_opt = up->add_option(
      "--slurm-args", slurm_args, "As for run; the allocation is cancelled by `down`");
  up->add_option("--launcher", launcher, "As for run")
      ->check(CLI::IsMember({"local", "netns", "ssh", "slurm"}));
  std::string state_dir;
  bool now = false;
  double down_wait_s = 60;
  CLI::App* status = app.add_subcommand(
      "status", "Each process of a run that `up` (or `run`) started: running, exited with its\n"
                "code, or killed by a signal, and its host");
  status->add_option("RUN_DIR", state_dir, "The run directory, or its state.json")->required();
  status->add_flag("--json", json, "Print it as one JSON object");
  CLI::App* down = app.add_subcommand(
      "down", "Stop what `up` started (the stream ends and drains, as a Ctrl-C of run),\n"
              "remove its hosts, gather the summaries and print the report, as run does");
  down->add_option("RUN_DIR", state_dir, "The run directory, or its state.json")->required();
  down->add_flag("--json", json, "Print the report as one JSON object");
  down->add_flag("--now", now, "Stop the processes at once (SIGTERM) rather than drain the stream");
  down->add_option("--wait", down_wait_s,
                   "Seconds to wait for the supervisor before it is killed and down stops\n"
                   "what is left itself")
      ->check(CLI::Validator(check_timeout, "SECONDS"))
      ->capture_default_str();
  bool prometheus = false;
  std::string prometheus_rules = SLUICE_SOURCE_DIR "/deploy/prometheus/sluice.rules.yml";
  std::string prometheus_consoles = SLUICE_SOURCE_DIR "/deploy/prometheus/consoles";
  run->add_flag("--prometheus", prometheus,
                "Also start a Prometheus server (Debian's `prometheus`) scraping every process\n"
                "each second, with sluice's recording rules; its data in RUN/prometheus. The\n"
                "report adds what it recorded per process (CPE_p, CPE_s, Gb/s). Local launcher\n"
                "only: netns hosts cannot be reached from this namespace");
  run->add_option("--prometheus-rules", prometheus_rules, "Recording rules for --prometheus")
      ->capture_default_str();
  plan->add_option("--bin-dir", bin_dir, "As for run");

  // render: the deployment as input for another system that starts it.
  CLI::App* render = app.add_subcommand(
      "render",
      "Write FILE.yaml for a cluster manager that starts the processes itself: --k8s,\n"
      "Kubernetes manifests (a ConfigMap with the deployment as the pods read it, and per\n"
      "process a headless Service and a Pod); --slurm, the batch script to submit with\n"
      "sbatch (one srun step per process); to standard output, or files in -o DIR");
  add_common(render);
  bool render_k8s_flag = false;
  K8sOptions k8s;
  std::string render_dir;
  render->add_flag("--k8s", render_k8s_flag, "Kubernetes manifests (deploy/README.md, \"Kubernetes\")");
  bool render_slurm = false;
  render->add_flag("--slurm", render_slurm,
                   "A Slurm batch script (-o DIR: DIR/NAME.sbatch): #SBATCH --nodes=<hosts>\n"
                   "--exclusive, each host on a node of the job in order at its address, one\n"
                   "`srun --nodes=1 --ntasks=1 -w NODE` step per process (CPU binding from the\n"
                   "host's cores), sinks first (deploy/README.md, \"slurm\")");
  render->add_option("--bin-dir", bin_dir, "--slurm: where the script's programs are (as for run)");
  render->add_option("--image", k8s.image,
                     "--k8s: the container image holding sluice-loadgen, -node and -sink on PATH\n"
                     "(the repository's Dockerfile builds it); required");
  render->add_option("-o,--output-dir", render_dir,
                     "Write one file per object group into DIR (made if missing) instead of\n"
                     "printing one YAML stream");
  render->add_option("--name", k8s.name,
                     "--k8s: prefix of every object's name and the app.kubernetes.io/instance\n"
                     "label (default: the file's name without .yaml)");
  render->add_option("--memory", k8s.memory, "--k8s: each container's memory request and limit")
      ->capture_default_str();
  render->add_option("--cpus", k8s.default_cpus,
                     "--k8s: whole cores for a process when neither it nor its host gives `cores`")
      ->capture_default_str();
  render->add_option("--metrics-port", k8s.metrics_port,
                     "--k8s: the first metrics port when the file leaves metrics_port 0")
      ->capture_default_str();
  render->add_flag("--host-network", k8s.host_network,
                   "--k8s: run every pod on its node's network (hostNetwork), as RDMA NICs\n"
                   "without an SR-IOV/RDMA CNI need for fabric and ucx links");
  render->add_flag("--pod-monitor", k8s.pod_monitor,
                   "--k8s: also a PodMonitor (Prometheus Operator) scraping every pod each second,\n"
                   "labelled process and role as the shipped rules, console and dashboard expect");
  render->add_option("--rdma-resource", k8s.rdma_resource,
                     "--k8s: an extended resource (e.g. rdma/hca) each pod with a fabric or ucx\n"
                     "link asks for, one unit, with IPC_LOCK to register memory");

  // keys: the reference of the deployment file and the operators, made from
  // their declarations (graph/config_doc.h): docs/CONFIG.md, docs/OPERATORS.md.
  CLI::App* keys_cmd = app.add_subcommand(
      "keys", "Print the reference of every deployment key (its section, type, default, what\n"
              "each preset sets, the carrier that reads it, what it does) as Markdown:\n"
              "docs/CONFIG.md is this output; with --operators, docs/OPERATORS.md");
  bool keys_ops = false;
  keys_cmd->add_flag("--operators", keys_ops, "Print docs/OPERATORS.md: every operator and its parameters");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; any other parse error exits 2, as --help
    // says (not CLI11's own codes, 105 and up).
    return app.exit(e) == 0 ? kOk : kBadInput;
  }

  if (keys_cmd->parsed()) {
    fmt::print("{}", keys_ops ? operators_markdown() : keys_markdown());
    return kOk;
  }

  if (status->parsed() || down->parsed()) {
    SessionResult res = status->parsed() ? deployment_status(state_dir, json)
                                         : down_deployment(state_dir, now, json, down_wait_s);
    fmt::print("{}", res.out);
    std::fflush(stdout);
    fmt::print(stderr, "{}", res.err);
    return res.exit_code;
  }

  Deployment d;
  Status st = load_deployment(file, sets, &d);
  if (!st) {
    fmt::print(stderr, "sluice-deploy: {}\n", st.message());
    if (json) {
      RunReport r;
      r.deployment = file;
      r.error = st.message();
      fmt::print("{}\n", report_json(r));
    }
    return kBadInput;
  }
  for (const std::string& w : d.warnings) fmt::print(stderr, "sluice-deploy: warning: {}\n", w);

  if (render->parsed() && render_k8s_flag == render_slurm) {
    fmt::print(stderr, "sluice-deploy: render: say what to render: --k8s or --slurm\n");
    return kBadInput;
  }
  if (render->parsed() && render_k8s_flag) {
    std::vector<K8sFile> files;
    st = render_k8s(d, k8s, &files);
    if (st && !render_dir.empty()) st = write_k8s(render_dir, files);
    if (!st) {
      fmt::print(stderr, "sluice-deploy: render --k8s: {}\n", st.message());
      return kBadInput;
    }
    if (render_dir.empty()) fmt::print("{}", k8s_stream(files));
    else for (const auto& f : files) fmt::print("{}/{}\n", render_dir, f.path);
    return kOk;
  }

  if (check->parsed()) {
    fmt::print("# {}: ok ({} processes, preset {})\n{}{}", file, d.processes.size(), d.preset,
               describe_graph(d), dump_deployment(d));
    return kOk;
  }

  if (render->parsed()) {  // --slurm
    Programs programs;
    if (st = find_programs(bin_dir, &programs); !st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    if (d.hosts.empty()) {
      fmt::print(stderr, "sluice-deploy: {}: render --slurm puts each host of `hosts:` on a node, "
                         "and this file has none\n", file);
      return kBadInput;
    }
    const std::string script = slurm_batch_script(d, programs);
    if (render_dir.empty()) {
      fmt::print("{}", script);
      return kOk;
    }
    std::error_code ec;
    std::filesystem::create_directories(render_dir, ec);
    const std::string out =
        (std::filesystem::path(render_dir) / (std::filesystem::path(file).stem().string() + ".sbatch"))
            .string();
    std::FILE* f = std::fopen(out.c_str(), "w");
    if (!f || std::fputs(script.c_str(), f) < 0 || std::fclose(f) != 0) {
      fmt::print(stderr, "sluice-deploy: render --slurm: cannot write {}\n", out);
      return kBadInput;
    }
    chmod(out.c_str(), 0755);
    fmt::print("{}\n", out);
    return kOk;
  }

  if (!launcher.empty()) d.launcher = launcher;
  // slurm: each host takes the address of the node it maps to, before
  // anything is resolved, so resolved.yaml and every process agree. Without
  // an allocation the file is left as it is, and the executor's check says
  // why it cannot run.
  // --slurm-args: an allocation of our own, released when the run ends.
  struct Release {
    std::string job;
    ~Release() { slurm_release(job); }
  } own_allocation;
  if (d.launcher == "slurm" && slurm_args_opt->count() + up_slurm_args_opt->count() > 0 &&
      !getenv("SLURM_JOB_ID") && !d.hosts.empty()) {
    const size_t nodes = slurm_nodes_needed(d);
    // Named after the run, so `down` finds it even if up's supervisor died.
    if (run_dir.empty()) run_dir = default_run_dir();
    const std::string name = slurm_job_name(run_dir);
    fmt::print(stderr, "sluice-deploy: slurm: salloc --no-shell --nodes={} --job-name={} {}\n",
               nodes, name, slurm_args);
    if (st = slurm_allocate(nodes, name, slurm_args, &own_allocation.job); !st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    fmt::print(stderr, "sluice-deploy: slurm: job {} (cancelled when the run ends)\n",
               own_allocation.job);
    setenv("SLURM_JOB_ID", own_allocation.job.c_str(), 1);
    unsetenv("SLURM_JOB_NODELIST");
    // The executor that ends the run (this one, or up's supervisor's)
    // cancels it when it removes the hosts.
    setenv("SLUICE_SLURM_OWN_JOB", own_allocation.job.c_str(), 1);
  }
  if (d.launcher == "slurm" && !d.hosts.empty()) {
    SlurmAllocation alloc;
    std::map<std::string, size_t> nodes;
    if (slurm_allocation(&alloc) && slurm_map_hosts(d, alloc, &nodes)) {
      std::vector<std::string> with = sets;
      for (auto& s : slurm_address_overrides(d, alloc, nodes)) with.push_back(s);
      Deployment mapped;
      if (st = load_deployment(file, with, &mapped); !st) {
        fmt::print(stderr, "sluice-deploy: {} on the nodes of Slurm job {}: {}\n", file,
                   alloc.job_id, st.message());
        return kBadInput;
      }
      mapped.launcher = "slurm";
      d = std::move(mapped);
    }
  }
  // One name per run, kept by its restarts (they read the same
  // resolved.yaml): a snapshot from an earlier run in the same run
  // directory or state_dir is passed over, not restored.
  if (d.run_id.empty()) d.run_id = new_run_id();
  std::unique_ptr<Executor> executor;
  st = make_executor(d, stderr, &executor);

  if (plan->parsed() && predict_flag) {
    Calibration cal;
    Prediction pred;
    st = load_calibration(calibration_path, &cal);
    if (st) st = predict(d, cal, &pred);
    if (!st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    fmt::print("{}", prediction_text(d, cal, pred));
    return kOk;
  }

  if (plan->parsed()) {
    Programs programs;
    if (st) st = find_programs(bin_dir, &programs);
    if (!st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    fmt::print("{}", plan_text(d, programs, *executor, run_dir));
    std::fflush(stdout);
    // A launcher that cannot run here is said after the plan, as run would.
    if (Status cs = executor->check(); !cs) {
      fmt::print(stderr, "sluice-deploy: run would stop before it starts: {}\n", cs.message());
      return kBadInput;
    }
    return kOk;
  }

  if (st) st = executor->check();
  if (!st) {
    fmt::print(stderr, "sluice-deploy: {}\n", st.message());
    if (json) {
      RunReport r;
      r.deployment = file;
      r.preset = d.preset;
      r.error = st.message();
      fmt::print("{}\n", report_json(r));
    }
    return kBadInput;
  }

  LaunchOptions opts;
  opts.prometheus = prometheus;
  opts.prometheus_rules = prometheus_rules;
  if (std::filesystem::is_directory(prometheus_consoles)) opts.prometheus_consoles = prometheus_consoles;
  if (prometheus && d.launcher != "local") {
    fmt::print(stderr,
               "sluice-deploy: --prometheus runs the server in this network namespace, which "
               "cannot reach the hosts of the {} launcher; use --launcher local, or point a "
               "Prometheus inside the hosts' network at their metrics_url\n",
               d.launcher);
    return kBadInput;
  }
  if (prometheus && !d.metrics) {
    fmt::print(stderr, "sluice-deploy: --prometheus scrapes the processes' metrics, and {} sets "
                       "metrics: off\n", d.file);
    return kBadInput;
  }
  if (prometheus && d.metrics_port == 0) {
    // Prometheus must know every target before the processes start (it
    // takes up to 5 s to apply targets it discovers): the run gets ports.
    d.metrics_port = free_ports("0.0.0.0", d.processes.size());
    if (d.metrics_port == 0) {
      fmt::print(stderr, "sluice-deploy: --prometheus: no {} consecutive free ports for the "
                         "processes' metrics; set metrics_port\n", d.processes.size());
      return kBadInput;
    }
  }
  // The live table, on a terminal only: never into a file, a pipe or --json.
  opts.live_table = !json && d.metrics && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  opts.executor = executor.get();
  opts.run_dir = run_dir;
  opts.timeout_s = timeout_s;
  opts.stop_signal = &g_stop_signal;
  st = find_programs(bin_dir, &opts.programs);
  if (st) st = check_run_dir_free(run_dir);
  if (!st) {
    fmt::print(stderr, "sluice-deploy: {}\n", st.message());
    if (json) {
      RunReport r;
      r.deployment = file;
      r.preset = d.preset;
      r.error = st.message();
      fmt::print("{}\n", report_json(r));
    }
    return kBadInput;
  }

  if (up->parsed()) {
    opts.executor = nullptr;  // the supervisor makes its own
    SessionResult res = up_deployment(d, opts, json);
    if (res.exit_code == 0) own_allocation.job.clear();  // the supervisor's now, until down
    fmt::print("{}", res.out);
    std::fflush(stdout);
    fmt::print(stderr, "{}", res.err);
    return res.exit_code;
  }
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
  if (json) {
    fmt::print("{}\n", report_json(r));
    if (!r.ok) fmt::print(stderr, "sluice-deploy: {}\n", r.error);
  } else {
    fmt::print("{}", report_table(r));
  }
  std::fflush(stdout);
  return r.ok ? kOk : kRunFailed;
}
