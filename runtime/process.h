// runtime/: the assembly of a program from a deployment; may include every
// folder below deploy/.
//
// One sluice process: `instances` node instances, progress lines, and the
// summary. sluice-node, sluice-loadgen and sluice-sink are this with a role.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "graph/config.h"
#include "node/metrics.h"
#include "node/node.h"

namespace sluice {

// An application's end of a deployment (role publisher or subscriber; the
// library in client/): one instance of the process, assembled as every
// program's are, with the application's own stage in place of the
// generator or the verifier. A publisher's `source` hands the receive stage
// what the application committed; a subscriber's `destination` is made
// over the pool its events arrive in (and `ledger`, its receive stage, for
// acknowledgements the application gives).
struct AppEnd {
  std::unique_ptr<Source> source;
  std::function<std::unique_ptr<Destination>(SlotPool& pool, NetSource* ledger, Status* st)> destination;
};
struct AppInstance {
  std::unique_ptr<Instance> instance;
  NetSource* in = nullptr;        // a subscriber's upstream links
  NetDestination* out = nullptr;  // a publisher's downstream links
};
// Instance `instance` of application process `index`, not started. `stop`
// as for run_process: set before its downstream links connected, it ends
// the connecting at once.
Status build_app_instance(const Deployment& d, size_t index, uint32_t instance, TransportContext& ctx,
                          AppEnd end, std::function<void()> on_first, const std::atomic<bool>* stop,
                          AppInstance* out);

// Runs process `index` of the deployment to the end of its stream. `stop`,
// when set (by a signal), makes a load generator end its stream early, and a
// process still connecting to its downstream links give up (it has sent
// nothing yet).
// `bursts_path`: where a sink in burst mode writes its burst histograms
// ("" = nowhere).
// `restarted`: the starts before this one (--restarted, --starts); with
// `may_restart` (a supervisor restarts it when it dies) a load generator
// keeps its position for a restart to resume from (process.cc, Position).
Status run_process(const Deployment& d, size_t index, const std::atomic<bool>* stop,
                   ProcessSummary* out, const std::string& bursts_path = "", uint32_t restarted = 0,
                   bool may_restart = false);

// The environment variable that tells a program the pid of the supervisor
// that started it as its child (sluice-deploy's local and netns launchers
// set it): the program ends when that process dies (process_main).
constexpr const char* kSupervisorPidEnv = "SLUICE_SUPERVISOR_PID";
// Set to "stdin" by sluice-deploy's ssh and slurm launchers: the program's
// stdin is its supervisor's connection, never written to; end of file there
// (the supervisor, its ssh client or srun gone) ends the program as the
// supervisor's death ends a local child (SIGTERM).
constexpr const char* kLifelineEnv = "SLUICE_LIFELINE";

// A load generator's exit code when it was asked to stop (SIGINT: Ctrl-C,
// sluice-deploy down) before its stream began, still connecting: it sent
// nothing. 0 is a run to its end, 1 a failure, 2 a refusal (the file, a
// restart without snapshots), 3 a sink's verdict of lost tuples.
constexpr int kExitStoppedBeforeStream = 4;

// main() of the three programs: parses the command line (a deployment file,
// or standalone flags), runs, writes the summary. Returns the exit code.
int process_main(Role role, int argc, char** argv);

}  // namespace sluice
