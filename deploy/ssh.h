// deploy/: the ssh executor: each process started on its host over ssh, as
// on a real cluster.
//
//   1. check(): `ssh` and `scp` are here, `ssh_key` exists, and every host a
//      process names answers `ssh ... true` within 5 s, non-interactively
//      (BatchMode): an unreachable host or a refused key fails the run
//      before anything starts, naming the host, its address, port and user.
//   2. start(), the first time on a host: makes the run's folder there and
//      copies resolved.yaml into it (and with `copy_binaries: on` the three
//      programs into `remote_dir`/bin), unless `remote_dir` is empty: then
//      the hosts see this machine's paths (a shared or mirrored tree) and
//      nothing is copied.
//   3. start(): `ssh [-p PORT] [-i KEY] [OPTIONS] [USER@]ADDRESS 'cd RUN &&
//      echo $$ > NAME.pid && SLUICE_LIFELINE=stdin exec PROGRAM ARGS'`. The
//      local ssh client is the child the run waits for, its output the
//      process's log (streamed as it runs), its exit status the program's
//      (255: ssh itself failed, or the program died by a signal). The remote
//      shell execs the program, so NAME.pid is the program's pid and its
//      process group. The client's stdin is a pipe this process holds open
//      and never writes: if it dies (even by SIGKILL) the program reads end
//      of file on its stdin and stops itself (runtime/process.h,
//      kLifelineEnv).
//   4. signal(): `ssh HOST kill -SIG -- -PID` reaches the remote program and
//      what it started; SIGKILL also ends the local client.
//   5. fetch(): scp of the summary back, when the paths are not shared.
//   6. pinning (`cores`) is the host's own business (taskset on the host is
//      not run for it); plan and the report say the host, not CPUs.
#pragma once

#include <cstdio>
#include <memory>

#include "deploy/executor.h"

namespace sluice {

std::unique_ptr<Executor> make_ssh_executor(const Deployment& d, std::FILE* progress);

}  // namespace sluice
