// render: the deployment as input for a cluster manager that starts the
// processes itself: Kubernetes manifests (k8s.h) or a Slurm batch script
// (slurm.h).
#include <sys/stat.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "deploy/cli.h"
#include "deploy/k8s.h"
#include "deploy/launcher.h"
#include "deploy/slurm.h"
#include "graph/config.h"

namespace sluice::cli {
namespace {

class Render : public Subcommand {
 public:
  ExitCodes exit_codes() const override {
    return {"written", "",
            "as validate; --k8s and --slurm both or neither; a bad --image, --memory, "
            "--rdma-resource or --name; --slurm on a file without hosts: or without the programs; "
            "-o DIR cannot be written"};
  }

  int run() override {
    Deployment d;
    if (Status st = load_deployment(args_.file, args_.sets, &d); !st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    for (const std::string& w : d.warnings) fmt::print(stderr, "sluice-deploy: warning: {}\n", w);
    if (k8s_flag_ == slurm_flag_) {
      fmt::print(stderr, "sluice-deploy: render: say what to render: --k8s or --slurm\n");
      return kBadInput;
    }
    return k8s_flag_ ? k8s(d) : slurm(d);
  }

 protected:
  CLI::App* declare(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "render",
        "Write FILE.yaml for a cluster manager that starts the processes itself: --k8s,\n"
        "Kubernetes manifests (a ConfigMap with the deployment as the pods read it, and per\n"
        "process a headless Service and a Pod); --slurm, the batch script to submit with\n"
        "sbatch (one srun step per process); to standard output, or files in -o DIR");
    args_.declare(sub);
    sub->add_flag("--k8s", k8s_flag_, "Kubernetes manifests (deploy/README.md, \"Kubernetes\")");
    sub->add_flag("--slurm", slurm_flag_,
                  "A Slurm batch script (-o DIR: DIR/NAME.sbatch): #SBATCH --nodes=<hosts>\n"
                  "--exclusive, each host on a node of the job in order at its address, one\n"
                  "`srun --nodes=1 --ntasks=1 -w NODE` step per process (CPU binding from the\n"
                  "host's cores), sinks first (deploy/README.md, \"slurm\")");
    sub->add_option("--bin-dir", bin_dir_, "--slurm: where the script's programs are (as for run)");
    sub->add_option("--image", k8s_.image,
                    "--k8s: the container image holding sluice-loadgen, -node and -sink on PATH\n"
                    "(the repository's Dockerfile builds it); required");
    sub->add_option("-o,--output-dir", dir_,
                    "Write one file per object group into DIR (made if missing) instead of\n"
                    "printing one YAML stream");
    sub->add_option("--name", k8s_.name,
                    "--k8s: prefix of every object's name and the app.kubernetes.io/instance\n"
                    "label (default: the file's name without .yaml)");
    sub->add_option("--memory", k8s_.memory, "--k8s: each container's memory request and limit")
        ->capture_default_str();
    sub->add_option("--cpus", k8s_.default_cpus,
                    "--k8s: whole cores for a process when neither it nor its host gives `cores`")
        ->capture_default_str();
    sub->add_option("--metrics-port", k8s_.metrics_port,
                    "--k8s: the first metrics port when the file leaves metrics_port 0")
        ->capture_default_str();
    sub->add_flag("--host-network", k8s_.host_network,
                  "--k8s: run every pod on its node's network (hostNetwork), as RDMA NICs\n"
                  "without an SR-IOV/RDMA CNI need for fabric and ucx links");
    sub->add_flag("--pod-monitor", k8s_.pod_monitor,
                  "--k8s: also a PodMonitor (Prometheus Operator) scraping every pod each second,\n"
                  "labelled process and role as the shipped rules, console and dashboard expect");
    sub->add_option("--rdma-resource", k8s_.rdma_resource,
                    "--k8s: an extended resource (e.g. rdma/hca) each pod with a fabric or ucx\n"
                    "link asks for, one unit, with IPC_LOCK to register memory");
    return sub;
  }

 private:
  int k8s(const Deployment& d) {
    std::vector<K8sFile> files;
    Status st = render_k8s(d, k8s_, &files);
    if (st && !dir_.empty()) st = write_k8s(dir_, files);
    if (!st) {
      fmt::print(stderr, "sluice-deploy: render --k8s: {}\n", st.message());
      return kBadInput;
    }
    if (dir_.empty()) fmt::print("{}", k8s_stream(files));
    else for (const auto& f : files) fmt::print("{}/{}\n", dir_, f.path);
    return kOk;
  }

  int slurm(const Deployment& d) {
    Programs programs;
    if (Status st = find_programs(bin_dir_, &programs); !st) {
      fmt::print(stderr, "sluice-deploy: {}\n", st.message());
      return kBadInput;
    }
    if (d.hosts.empty()) {
      fmt::print(stderr, "sluice-deploy: {}: render --slurm puts each host of `hosts:` on a node, "
                         "and this file has none\n", args_.file);
      return kBadInput;
    }
    const std::string script = slurm_batch_script(d, programs);
    if (dir_.empty()) {
      fmt::print("{}", script);
      return kOk;
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    const std::string out = (fs::path(dir_) / (fs::path(args_.file).stem().string() + ".sbatch")).string();
    std::FILE* f = std::fopen(out.c_str(), "w");
    if (!f || std::fputs(script.c_str(), f) < 0 || std::fclose(f) != 0) {
      fmt::print(stderr, "sluice-deploy: render --slurm: cannot write {}\n", out);
      return kBadInput;
    }
    chmod(out.c_str(), 0755);
    fmt::print("{}\n", out);
    return kOk;
  }

  FileArgs args_;
  bool k8s_flag_ = false, slurm_flag_ = false;
  K8sOptions k8s_;
  std::string bin_dir_, dir_;
};

}  // namespace

std::unique_ptr<Subcommand> render_command() { return std::make_unique<Render>(); }

}  // namespace sluice::cli
