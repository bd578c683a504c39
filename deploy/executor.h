// deploy/: may include every folder below it.
//
// The executor: how `sluice-deploy run` starts a program on a host. The run
// (launcher.h) asks an Executor and never knows which launcher it has:
//
//   1. check(): can this launcher run the deployment here at all (netns: the
//      capabilities to make namespaces, `ip` and `tc`; local: every host's
//      address is one of this machine's). A failure is the caller's exit 2.
//   2. up(): makes the hosts ready (local: nothing; netns: a namespace per
//      host joined to a bridge, addresses, rates). On failure, what it made
//      is removed before it returns.
//   3. start(): one program on process i's host, stdin /dev/null, stdout and
//      stderr to its log, in a process group of its own, pinned to the host's
//      `cores`. It returns the pid of a child of this process that lives as
//      long as the program does (the program itself for local and netns; an
//      ssh client would stand for a remote one), so the run waits for every
//      launcher's programs the same way (pidfd, waitpid).
//   4. signal(): a signal to the program and everything it started.
//   5. fetch(): a file the program wrote on its host, brought here.
//   6. down(): removes everything up() made. The destructor calls it too, so
//      a failure, a stop signal or an exception leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/status.h"
#include "graph/config.h"

namespace sluice {

class Executor {
 public:
  virtual ~Executor() = default;
  Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  virtual const char* name() const = 0;
  virtual Status check() const { return {}; }
  virtual Status up() { return {}; }
  virtual Status start(size_t process, const std::string& program,
                       const std::vector<std::string>& args, const std::string& log_path,
                       pid_t* pid) = 0;
  // The command line start() runs for process i: `plan` prints it, so
  // what plan says and what run does come from one place.
  virtual std::vector<std::string> command(size_t process, const std::string& program,
                                           const std::vector<std::string>& args) const;
  // The commands up() runs, in order, each with what it is for (empty: it
  // makes nothing).
  struct Step {
    std::vector<std::string> argv;
    std::string why;
  };
  virtual std::vector<Step> up_steps() const { return {}; }
  virtual void signal(pid_t pid, int sig);
  virtual Status fetch(size_t process, const std::string& path, const std::string& local_path);
  virtual Status down() { return {}; }
  // What up() made that outlives a crash of sluice-deploy, for the run's
  // state.json: the netns launcher's namespaces (`ip netns del` each).
  virtual std::vector<std::string> namespaces() const { return {}; }
  // Where process i runs, in words, for reports: "h1 (10.77.0.1, netns
  // sl123-h1, cpus 0-1)" or "127.0.0.1".
  virtual std::string where(size_t process) const;
  // The machine a cluster manager placed process i on (slurm: its node,
  // "sn2"), for the report and for naming a process that died; "" for the
  // launchers that start on the file's hosts themselves.
  virtual std::string node(size_t) const { return ""; }
  // The program's wait status from that of the child start() returned
  // (slurm: srun exits 128+N for a task killed by signal N, turned back
  // into "killed by signal N"). The others' child is the program.
  virtual int wait_status(int status) const { return status; }
};

// The executor the deployment's `launcher` names (graph/registry.h: local,
// netns, ssh, slurm). `progress` gets a line per thing made or removed
// (nullptr: quiet).
Status make_executor(const Deployment& d, std::FILE* progress, std::unique_ptr<Executor>* out);
// Whether make_executor knows `launcher` (deploy_launcher_test holds every
// launcher of the registry to it).
bool has_executor(const std::string& launcher);

// For programs that are not this process's children (ssh, srun): a pipe
// whose read end is their launcher client's stdin and whose write end this
// process holds open and never writes. When this process dies, even by
// SIGKILL, the clients read end of file and pass it on to the programs,
// which were started with kLifelineEnv=stdin and stop themselves
// (runtime/process.cc). Both ends are close-on-exec; spawn_program makes
// the read end a client's fd 0 alone.
class Lifeline {
 public:
  Lifeline();
  // spawn_program with the read end as stdin (and kLifelineEnv set); the
  // error, if the pipe could not be made.
  Status spawn(const std::vector<std::string>& argv, const std::string& log_path, pid_t* pid) const;

 private:
  Fd read_, write_;
  int error_ = 0;
};

// Starts argv[0] with argv: stdin /dev/null, stdout and stderr to log_path,
// its own process group, signals at their defaults, pinned to `cpus` when
// given. Every executor's start() ends here. `child`: argv[0] runs as this
// process's own child (local; netns, whose `ip netns exec` execs it): it
// gets kSupervisorPidEnv=<this pid>, so that a sluice program ends when
// its supervisor dies, even by SIGKILL (runtime/process.cc). Not for ssh or
// srun, whose programs are not this process's children. `stdin_fd` >= 0:
// the child's stdin instead of /dev/null (a Lifeline's), and kLifelineEnv
// =stdin in its environment (srun passes it on to the program; ssh's
// remote command sets it itself). Inherited values of either variable are
// removed.
Status spawn_program(const std::vector<std::string>& argv, const std::string& log_path,
                     const std::vector<unsigned>& cpus, pid_t* pid, bool child = false,
                     int stdin_fd = -1);

// Runs a helper command (ip, tc) to the end in a process group of its own, so
// a Ctrl-C at the terminal does not kill it halfway; its output in *output.
Status run_command(const std::vector<std::string>& argv, std::string* output = nullptr);

// An executable named `name` on PATH, else in /usr/sbin, /sbin; "" if none.
std::string find_tool(const std::string& name);

// `argv` as one POSIX shell command line: words that need it in single quotes
// (anything but [A-Za-z0-9_./:=@%+,-]).
std::string shell_quote(const std::vector<std::string>& argv);

}  // namespace sluice
