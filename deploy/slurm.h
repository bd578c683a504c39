// deploy/: the slurm executor: each process a job step of a Slurm
// allocation, on a node of its own, as on an HPC cluster.
//
//   1. The allocation: SLURM_JOB_ID (after `salloc -N4 --no-shell` and
//      `export SLURM_JOB_ID=...`, or inside a batch script). Its nodes come
//      from SLURM_JOB_NODELIST (else `squeue -j JOB -o %N`), expanded by
//      `scontrol show hostnames`; each node's address from `scontrol show
//      node` (NodeAddr).
//   2. The mapping: the hosts that processes name, in the order of `hosts:`,
//      onto the allocation's nodes in order (h1 -> its first node, ...). More
//      hosts than nodes is an error naming both counts. sluice-deploy gives
//      each mapped host its node's address (--set hosts.K.address=...)
//      before anything is resolved, so every process binds and is reached at
//      its node's address, and resolved.yaml says so.
//   3. start(): `srun --jobid=JOB --nodes=1 --ntasks=1 -w NODE --overlap
//      --job-name=sluice-NAME-PID-N --unbuffered CPU-BINDING PROGRAM ARGS`.
//      The local srun is the child the run waits for, its output the
//      process's log; the run directory is a path both sides see (a shared
//      file system, as on a cluster). CPU binding: a host with `cores` gets
//      --whole --cpu-bind=mask_cpu:MASK (the allocation must own those
//      CPUs: salloc/sbatch --exclusive); without, --cpu-bind=none.
//      `pin_stages` is the process's own business, as for every launcher.
//   4. wait_status(): srun exits 128+N when its task was killed by signal N:
//      that is turned back into "killed by signal N", so a step killed with
//      `scancel --signal=KILL` is named as killed, with its node.
//   5. signal(): `scancel --signal=SIG JOB.STEP` (the step found by its
//      unique name in `squeue -s`); SIGKILL also cancels the step and kills
//      the local srun. Nothing is left running in the allocation.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deploy/executor.h"
#include "graph/config.h"

namespace sluice {

struct Programs;

struct SlurmAllocation {
  std::string job_id;
  std::vector<std::string> nodes;      // in Slurm's order, expanded
  std::vector<std::string> addresses;  // NodeAddr of each node
};

// The allocation this program runs in (SLURM_JOB_ID); an error naming what
// is missing (no SLURM_JOB_ID, no scontrol, an unknown job).
Status slurm_allocation(SlurmAllocation* out);

// Host name -> index into a.nodes, for every host a process names, in the
// order of `hosts:`. A file without `hosts:` maps each process to a node of
// its own, by the process's address (its `host`).
Status slurm_map_hosts(const Deployment& d, const SlurmAllocation& a,
                       std::map<std::string, size_t>* out);

// --set overrides that give each mapped host its node's address.
std::vector<std::string> slurm_address_overrides(const Deployment& d, const SlurmAllocation& a,
                                                 const std::map<std::string, size_t>& map);

// srun's options for a host's CPU binding: --whole
// --cpu-bind=mask_cpu:0x... for `cores`, else --cpu-bind=none.
std::vector<std::string> slurm_cpu_binding(const HostConfig* h);

// The job steps a run started, still known to Slurm: each named
// sluice-PROCESS-OWNER-N, OWNER the pid of the sluice-deploy (run, or up's
// supervisor) that started it. For `status` and for `down` after a
// supervisor died (each is scancel'ed then).
struct SlurmStep {
  std::string id;       // JOB.STEP
  std::string process;  // the process's name
  std::string nodes;    // where it runs
};
Status slurm_steps_of(pid_t owner, std::vector<SlurmStep>* out);

// --slurm-args: an allocation of `nodes` nodes made for this run, `salloc
// --no-shell --nodes=N --job-name=NAME ARGS` (ARGS split at spaces; it waits
// as salloc does until Slurm grants it); its job id in *job_id.
// slurm_release() is `scancel JOB` of it, when the run is over: the
// executor's down() does it when SLUICE_SLURM_OWN_JOB names its job (set by
// sluice-deploy for the run or up's supervisor it starts).
Status slurm_allocate(size_t nodes, const std::string& job_name, const std::string& args,
                      std::string* job_id);
void slurm_release(const std::string& job_id);
// The name of the allocation --slurm-args makes for run directory `run_dir`:
// sluice-<its last component>, the state's run_id.
std::string slurm_job_name(const std::string& run_dir);

// How many nodes the file needs: the hosts that processes name.
size_t slurm_nodes_needed(const Deployment& d);

std::unique_ptr<Executor> make_slurm_executor(const Deployment& d, std::FILE* progress);

// `sluice-deploy render --slurm`: the batch script a user submits with
// sbatch: one srun step per process on the node its host maps to, the
// resolved deployment inline, the addresses taken from the allocation at
// run time. `file` is the deployment file as given (for the comments).
std::string slurm_batch_script(const Deployment& d, const Programs& programs);

}  // namespace sluice
