#include "deploy/slurm.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "deploy/launcher.h"
#include "deploy/ssh.h"

namespace fs = std::filesystem;

namespace sluice {

namespace {

std::string env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

// The value of KEY=VALUE in scontrol's output ("" if absent).
std::string field(const std::string& text, const std::string& key) {
  const std::string want = key + "=";
  std::istringstream in(text);
  for (std::string w; in >> w;)
    if (w.compare(0, want.size(), want) == 0) return w.substr(want.size());
  return "";
}

// The hosts that processes name, in the order of `hosts:`.
std::vector<size_t> used_hosts(const Deployment& d) {
  std::vector<size_t> out;
  for (size_t k = 0; k < d.hosts.size(); ++k)
    if (std::any_of(d.processes.begin(), d.processes.end(),
                    [&](const ProcessConfig& p) { return p.host_name == d.hosts[k].name; }))
      out.push_back(k);
  return out;
}

std::string cpu_mask(const std::vector<unsigned>& cpus) {
  // A hex mask of any width: nibble by nibble, most significant first.
  unsigned top = 0;
  for (unsigned c : cpus) top = std::max(top, c);
  std::string hex;
  for (int nib = static_cast<int>(top / 4); nib >= 0; --nib) {
    unsigned v = 0;
    for (unsigned c : cpus)
      if (c / 4 == static_cast<unsigned>(nib)) v |= 1u << (c % 4);
    hex += "0123456789abcdef"[v];
  }
  return "0x" + hex;
}

class SlurmExecutor : public Executor {
 public:
  SlurmExecutor(const Deployment& d, std::FILE* progress) : d_(d), progress_(progress) {
    srun_ = find_tool("srun");
    scancel_ = find_tool("scancel");
    squeue_ = find_tool("squeue");
  }
  ~SlurmExecutor() override {
    // Whatever still runs in the allocation goes (the run signals each
    // process; this is for an exception or an early return).
    for (auto& [pid, s] : started_)
      if (kill(pid, 0) == 0) signal(pid, SIGKILL);
  }

  const char* name() const override { return "slurm"; }

  Status check() const override {
    if (d_.hosts.empty())
      return Status::Error(fmt::format("{}: the slurm launcher puts each host of `hosts:` on a "
                                       "node of the allocation, and this file has none",
                                       d_.file));
    for (const char* tool : {"srun", "scancel", "squeue", "scontrol"})
      if (find_tool(tool).empty())
        return Status::Error(fmt::format("the slurm launcher needs `{}` (Debian's slurm-client), "
                                         "found on neither PATH nor /usr/sbin, /sbin",
                                         tool));
    return resolve();
  }

  Status start(size_t i, const std::string& program, const std::vector<std::string>& args,
               const std::string& log_path, pid_t* pid) override {
    if (Status st = resolve(); !st) return st;
    const std::string step = fmt::format("sluice-{}-{}-{}", d_.processes[i].name, getpid(), ++steps_);
    Status st = lifeline_.spawn(srun_argv(i, step, program, args), log_path, pid);
    if (st) {
      started_[*pid] = Step{i, step, ""};
      say("{} on node {}: step {}", d_.processes[i].name, node(i), step);
    }
    return st;
  }

  std::vector<std::string> command(size_t i, const std::string& program,
                                   const std::vector<std::string>& args) const override {
    return srun_argv(i, fmt::format("sluice-{}-{}-N", d_.processes[i].name, getpid()), program,
                     args);
  }

  int wait_status(int status) const override {
    // srun exits 128+N when its task was killed by signal N (1-31: srun's
    // own failures are other codes, e.g. 192 for a launch it could not do).
    if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) <= 128 + 31)
      return WEXITSTATUS(status) - 128;  // a wait status: killed by that signal
    return status;
  }

  void signal(pid_t pid, int sig) override {
    auto it = started_.find(pid);
    if (it == started_.end() || kill(pid, 0) != 0) {
      // Not ours, or srun has ended (and its step with it).
      if (sig == SIGKILL && pid > 0) kill(-pid, SIGKILL);
      return;
    }
    const std::string id = step_id(it->second);
    if (!id.empty()) {
      run_command({scancel_, "--quiet", fmt::format("--signal={}", sig), id});
      if (sig == SIGKILL) run_command({scancel_, "--quiet", id});
    } else if (sig != SIGKILL) {
      // The step is not made yet: srun passes the signal on to its task.
      kill(pid, sig);
    }
    if (sig == SIGKILL) kill(-pid, SIGKILL);
  }

  std::string where(size_t i) const override {
    const HostConfig* h = d_.host_of(i);
    if (!h) return d_.processes[i].host;
    const std::string n = node(i);
    const std::string cpus = h->cpus.empty() ? "" : ", cpus " + cpu_list_name(h->cpus);
    if (n.empty())  // plan outside an allocation
      return fmt::format("{} (the Slurm node it maps to, at that node's address{})", h->name, cpus);
    return fmt::format("{} (Slurm node {}, {}, job {}{})", h->name, n, h->address, alloc_.job_id,
                       cpus);
  }

  // The run's own allocation (--slurm-args) ends with its hosts.
  Status down() override {
    if (!alloc_.job_id.empty() && env("SLUICE_SLURM_OWN_JOB") == alloc_.job_id) {
      slurm_release(alloc_.job_id);
      say("job {} cancelled", alloc_.job_id);
    }
    return {};
  }

  std::string node(size_t i) const override {
    const HostConfig* h = d_.host_of(i);
    if (!h || !resolve()) return "";
    auto it = map_.find(h->name);
    return it == map_.end() ? "" : alloc_.nodes[it->second];
  }

 private:
  struct Step {
    size_t process;
    std::string name;  // the unique job step name it was started with
    std::string id;    // JOB.STEP once found
  };

  template <class... A>
  void say(fmt::format_string<A...> f, A&&... a) {
    if (!progress_) return;
    fmt::print(progress_, "sluice-deploy: slurm: {}\n", fmt::format(f, std::forward<A>(a)...));
    std::fflush(progress_);
  }

  // The allocation and the mapping, once.
  Status resolve() const {
    if (resolved_) return {};
    if (Status st = slurm_allocation(&alloc_); !st) return st;
    if (Status st = slurm_map_hosts(d_, alloc_, &map_); !st) return st;
    resolved_ = true;
    return {};
  }

  std::vector<std::string> srun_argv(size_t i, const std::string& step, const std::string& program,
                                     const std::vector<std::string>& args) const {
    std::string n = node(i);
    if (n.empty()) n = fmt::format("<node of host {}>", d_.processes[i].host_name);
    std::vector<std::string> a = {srun_.empty() ? "srun" : srun_,
                                  "--jobid=" + (alloc_.job_id.empty() ? "$SLURM_JOB_ID"
                                                                      : alloc_.job_id),
                                  "--nodes=1", "--ntasks=1", "-w", n, "--overlap",
                                  "--job-name=" + step, "--unbuffered"};
    for (auto& b : slurm_cpu_binding(d_.host_of(i))) a.push_back(b);
    a.push_back(program);
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }

  // JOB.STEP of a step we started, by its name in `squeue -s`; "" while it
  // is not there yet.
  std::string step_id(Step& s) const {
    if (!s.id.empty()) return s.id;
    std::string out;
    if (!run_command({squeue_, "-h", "-s", "-j", alloc_.job_id, "-o", "%i %j"}, &out)) return "";
    for (const std::string& l : lines_of(out)) {
      const size_t sp = l.find(' ');
      if (sp != std::string::npos && l.substr(sp + 1) == s.name) s.id = l.substr(0, sp);
    }
    return s.id;
  }

  const Deployment& d_;
  std::FILE* progress_;
  std::string srun_, scancel_, squeue_;
  mutable bool resolved_ = false;
  mutable SlurmAllocation alloc_;
  mutable std::map<std::string, size_t> map_;
  Lifeline lifeline_;              // ends the steps' programs if this process dies
  std::map<pid_t, Step> started_;  // local srun -> its step
  unsigned steps_ = 0;
};

}  // namespace

Status slurm_allocation(SlurmAllocation* out) {
  SlurmAllocation a;
  a.job_id = env("SLURM_JOB_ID");
  if (a.job_id.empty()) a.job_id = env("SLURM_JOBID");
  if (a.job_id.empty())
    return Status::Error(
        "the slurm launcher runs inside a Slurm allocation, and SLURM_JOB_ID is not set: run it "
        "in a batch script, or after `salloc -N<hosts> --no-shell` with `export "
        "SLURM_JOB_ID=<its job id>` (or render a batch script: sluice-deploy render --slurm)");
  const std::string scontrol = find_tool("scontrol");
  if (scontrol.empty())
    return Status::Error("the slurm launcher needs `scontrol` (Debian's slurm-client)");
  std::string list = env("SLURM_JOB_NODELIST");
  std::string text;
  if (list.empty() || env("SLURM_JOB_ID") != a.job_id) {
    // SLURM_JOB_ID set by hand (after salloc --no-shell): ask for its nodes.
    if (Status st = run_command({find_tool("squeue"), "-h", "-j", a.job_id, "-o", "%N"}, &text); !st)
      return Status::Error(fmt::format("Slurm job {} (SLURM_JOB_ID): cannot read its nodes: {}",
                                       a.job_id, st.message()));
    list = text;
  }
  if (list.empty())
    return Status::Error(fmt::format("Slurm job {} (SLURM_JOB_ID) has no nodes: is it running? "
                                     "(squeue -j {})",
                                     a.job_id, a.job_id));
  if (Status st = run_command({scontrol, "show", "hostnames", list}, &text); !st)
    return Status::Error(fmt::format("cannot expand the node list {}: {}", list, st.message()));
  a.nodes = lines_of(text);
  for (const std::string& n : a.nodes) {
    if (Status st = run_command({scontrol, "show", "node", n}, &text); !st)
      return Status::Error(fmt::format("Slurm node {}: {}", n, st.message()));
    std::string addr = field(text, "NodeAddr");
    if (addr.empty()) addr = n;
    a.addresses.push_back(addr);
  }
  *out = std::move(a);
  return {};
}

Status slurm_map_hosts(const Deployment& d, const SlurmAllocation& a,
                       std::map<std::string, size_t>* out) {
  if (d.hosts.empty())
    return Status::Error(fmt::format("{}: the slurm launcher puts each host of `hosts:` on a node "
                                     "of the allocation, and this file has none",
                                     d.file));
  const std::vector<size_t> used = used_hosts(d);
  if (used.size() > a.nodes.size()) {
    std::vector<std::string> names;
    for (size_t k : used) names.push_back(d.hosts[k].name);
    return Status::Error(fmt::format(
        "{}: the slurm launcher puts each host on a node of its own: {} hosts have processes "
        "({}), and Slurm job {} has {} node{} ({}); ask for {} (salloc -N{})",
        d.file, used.size(), fmt::join(names, ", "), a.job_id, a.nodes.size(),
        a.nodes.size() == 1 ? "" : "s", fmt::join(a.nodes, ", "), used.size(), used.size()));
  }
  out->clear();
  for (size_t j = 0; j < used.size(); ++j) (*out)[d.hosts[used[j]].name] = j;
  return {};
}

std::vector<std::string> slurm_address_overrides(const Deployment& d, const SlurmAllocation& a,
                                                 const std::map<std::string, size_t>& map) {
  std::vector<std::string> sets;
  for (size_t k = 0; k < d.hosts.size(); ++k) {
    auto it = map.find(d.hosts[k].name);
    if (it == map.end() || it->second >= a.addresses.size()) continue;
    sets.push_back(fmt::format("hosts.{}.address={}", k, a.addresses[it->second]));
  }
  return sets;
}

std::vector<std::string> slurm_cpu_binding(const HostConfig* h) {
  if (!h || h->cpus.empty()) return {"--cpu-bind=none"};
  // --whole: the step has every CPU the job has on the node, so the mask
  // can name any of them (a step otherwise gets the first free ones).
  return {"--whole", "--cpu-bind=mask_cpu:" + cpu_mask(h->cpus)};
}

Status slurm_steps_of(pid_t owner, std::vector<SlurmStep>* out) {
  out->clear();
  const std::string squeue = find_tool("squeue");
  if (squeue.empty()) return Status::Error("no `squeue` (Debian's slurm-client)");
  std::string text;
  if (Status st = run_command({squeue, "-h", "-s", "-o", "%i %j %N"}, &text); !st) return st;
  const std::string mark = fmt::format("-{}-", owner);
  for (const std::string& l : lines_of(text)) {
    std::istringstream in(l);
    SlurmStep s;
    std::string name;
    if (!(in >> s.id >> name >> s.nodes) || name.rfind("sluice-", 0) != 0) continue;
    const size_t at = name.rfind(mark);
    if (at == std::string::npos || at < 7) continue;
    const std::string n = name.substr(at + mark.size());
    if (n.empty() || !std::all_of(n.begin(), n.end(), ::isdigit)) continue;
    s.process = name.substr(7, at - 7);
    out->push_back(s);
  }
  return {};
}

size_t slurm_nodes_needed(const Deployment& d) { return used_hosts(d).size(); }

std::string slurm_job_name(const std::string& run_dir) {
  fs::path p(run_dir);
  if (p.filename().empty()) p = p.parent_path();
  return "sluice-" + p.filename().string();
}

Status slurm_allocate(size_t nodes, const std::string& job_name, const std::string& args,
                      std::string* job_id) {
  const std::string salloc = find_tool("salloc");
  if (salloc.empty()) return Status::Error("--slurm-args needs `salloc` (Debian's slurm-client)");
  std::vector<std::string> argv = {salloc, "--no-shell", fmt::format("--nodes={}", nodes),
                                   "--job-name=" + job_name};
  std::istringstream in(args);
  for (std::string w; in >> w;) argv.push_back(w);
  std::string text;
  if (Status st = run_command(argv, &text); !st)
    return Status::Error(fmt::format("no Slurm allocation: {}", st.message()));
  const std::string mark = "Granted job allocation ";
  const size_t at = text.find(mark);
  std::string id;
  for (size_t k = at == std::string::npos ? text.size() : at + mark.size();
       k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])); ++k)
    id += text[k];
  if (id.empty())
    return Status::Error(fmt::format("`{}` said no job id: {}", fmt::join(argv, " "), text));
  *job_id = id;
  return {};
}

void slurm_release(const std::string& job_id) {
  const std::string scancel = find_tool("scancel");
  if (!job_id.empty() && !scancel.empty()) run_command({scancel, job_id});
}

std::unique_ptr<Executor> make_slurm_executor(const Deployment& d, std::FILE* progress) {
  return std::make_unique<SlurmExecutor>(d, progress);
}

std::string slurm_batch_script(const Deployment& d, const Programs& programs) {
  const std::vector<size_t> used = used_hosts(d);
  const std::string stem = fs::path(d.file).stem().string();
  const double timeout = default_timeout_s(d);
  const long minutes = std::max(1L, static_cast<long>((timeout + 59) / 60));
  std::string s;
  s += "#!/bin/bash\n";
  s += fmt::format("# {} as a Slurm batch job, written by `sluice-deploy render --slurm {}`.\n",
                   d.file, d.file);
  s += "# Submit it with `sbatch THIS_FILE`. Each process is a job step on a node of its own;\n"
       "# each host of the file is a node of the allocation, in order, and its address is\n"
       "# the node's (NodeAddr). The programs' paths are this machine's, and the run folder\n"
       "# (SLUICE_RUN_DIR, default ./sluice-run-JOBID) must be on a file system every node\n"
       "# sees. `sluice-deploy run FILE --launcher slurm` inside an allocation does the same\n"
       "# and also reports, restarts and cleans up.\n";
  s += fmt::format("#SBATCH --job-name=sluice-{}\n", stem);
  s += fmt::format("#SBATCH --nodes={}\n", used.size());
  s += "#SBATCH --exclusive\n";
  s += fmt::format("#SBATCH --time={}\n", minutes);
  s += "#SBATCH --output=sluice-%j.out\n";
  s += "set -u\n\n";
  s += "RUN=${SLUICE_RUN_DIR:-$PWD/sluice-run-$SLURM_JOB_ID}\n";
  s += "mkdir -p \"$RUN\"\n";
  s += "mapfile -t NODES < <(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n";
  s += fmt::format("if [ \"${{#NODES[@]}}\" -lt {} ]; then\n", used.size());
  s += fmt::format("  echo \"sluice: {} needs {} nodes, the job has ${{#NODES[@]}}\" >&2\n", d.file,
                   used.size());
  s += "  exit 1\nfi\n";
  s += "addr() { scontrol show node \"$1\" | tr ' ' '\\n' | sed -n 's/^NodeAddr=//p'; }\n\n";
  s += "# The hosts of the file on the job's nodes.\n";
  s += "declare -A NODE ADDR\n";
  std::string sets;
  for (size_t j = 0; j < used.size(); ++j) {
    const HostConfig& h = d.hosts[used[j]];
    s += fmt::format("NODE[{}]=${{NODES[{}]}}; ADDR[{}]=$(addr \"${{NODE[{}]}}\")  # {} ({} in the file)\n",
                     h.name, j, h.name, h.name, h.name, h.address);
    sets += fmt::format(" --set \"hosts.{}.address=${{ADDR[{}]}}\"", used[j], h.name);
  }
  s += "\n# The deployment as resolved from the file; the addresses are set per process below.\n";
  s += "cat > \"$RUN/resolved.yaml\" <<'SLUICE_RESOLVED_YAML'\n";
  s += fmt::format("# The deployment as sluice-deploy resolved it from {}\n", d.file);
  Deployment as_run = d;
  as_run.launcher = "slurm";
  std::string dump = dump_deployment(as_run);
  if (!dump.empty() && dump.back() != '\n') dump += '\n';
  s += dump;
  s += "SLUICE_RESOLVED_YAML\n\n";
  s += "# Sinks first, load generators last, as sluice-deploy run starts them.\n";
  s += "PIDS=()\n";
  for (size_t k : d.start_order()) {
    const ProcessConfig& p = d.processes[k];
    const HostConfig* h = d.host_of(k);
    if (!h) continue;
    std::vector<std::string> bind = slurm_cpu_binding(h);
    s += fmt::format(
        "srun --nodes=1 --ntasks=1 -w \"${{NODE[{}]}}\" --overlap --job-name={} --unbuffered {} \\\n"
        "  {} --deployment \"$RUN/resolved.yaml\" --process {} --summary \"$RUN/{}.json\" \\\n"
        "  {} > \"$RUN/{}.log\" 2>&1 &\n",
        h->name, shell_quote({p.name}), fmt::join(bind, " "), shell_quote({programs.of(p.role)}),
        shell_quote({p.name}), p.name, sets.substr(1), p.name);
    s += "PIDS+=($!)\n";
  }
  s += "\n# The first step that fails stops the others (srun passes SIGTERM to its task).\n";
  s += "status=0\n";
  s += "for _ in \"${PIDS[@]}\"; do\n";
  s += "  if ! wait -n; then status=1; kill -TERM \"${PIDS[@]}\" 2>/dev/null; fi\n";
  s += "done\n";
  s += "echo \"sluice: logs and summaries in $RUN\"\n";
  s += "exit $status\n";
  return s;
}

}  // namespace sluice
