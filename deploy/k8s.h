// deploy/: Kubernetes manifests for a deployment (`sluice-deploy render --k8s`).
//
// The same graph as the other launchers, started by Kubernetes instead:
//
//   - one ConfigMap, NAME-deployment, holding the deployment as resolved for
//     the cluster (deployment.yaml): every process's `host` is its Service's
//     DNS name, it binds 0.0.0.0, `hosts:` is gone (the pod is the host; its
//     CPUs are the CPU manager's, so `cores` and `pin_stages` lists, which
//     name a machine's CPUs, become `cores: N` and `pin_stages: on`), and the
//     metrics endpoints bind 0.0.0.0 on fixed ports;
//   - per process (file order) a headless Service NAME-PROCESS (the address
//     its upstreams connect to; publishNotReadyAddresses, so the name
//     resolves as soon as the pod has an address) and a Pod of that name:
//     one container running the role's program on the ConfigMap, CPU
//     requests = limits in whole cores and memory requests = limits
//     (Guaranteed QoS: the static CPU manager gives it whole cores), named
//     ports (link<L>-<K> per input link L and instance K, `metrics`), a
//     readiness probe on /metrics, prometheus.io scrape annotations, and an
//     init container that waits until each downstream process answers on
//     its metrics port (or, with metrics off, its name resolves), since the
//     pods start in any order and a sender gives up after connect_timeout_ms.
//     The program runs without --summary, so its JSON summary is the last
//     line of its log (kubectl logs), which outlives the pod;
//   - with pod_monitor, a PodMonitor for the Prometheus Operator.
//
// Rendering is a function of the deployment and the options alone (no
// clock, no host name, no CPU count of this machine): the same input gives
// byte-identical output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/config.h"

namespace sluice {

struct K8sOptions {
  std::string image;            // the container image: required (registry/repo:tag or @digest)
  std::string name;             // the objects' name prefix and instance label; "": the file's stem
  std::string memory = "1Gi";   // every container's memory request and limit
  unsigned default_cpus = 1;    // whole cores for a process whose file gives no `cores`
  // The first metrics port when the file leaves metrics_port 0: below the
  // links' base_port (17100), and not 9400, where GPU nodes' DCGM exporter
  // listens on the host's network.
  uint16_t metrics_port = 17000;
  bool host_network = false;    // every pod on its node's network (hostNetwork)
  std::string rdma_resource;    // an extended resource (rdma/hca) for pods with fabric/ucx links
  bool pod_monitor = false;     // also a PodMonitor (Prometheus Operator) with process/role labels
};

// One file of the output: `path` its name in -o DIR, `yaml` its documents.
struct K8sFile {
  std::string path;
  std::string yaml;
};

// Checks the options: an image reference, a memory quantity, a resource name.
Status check_k8s_options(const K8sOptions& o);

// The deployment as the pods read it (the ConfigMap's deployment.yaml).
Status k8s_deployment(const Deployment& d, const K8sOptions& o, Deployment* out);

// Every manifest: NAME-deployment.yaml (the ConfigMap) first, then one file
// per process (its Service and Pod), in the file's order; with pod_monitor,
// NAME-podmonitor.yaml last.
Status render_k8s(const Deployment& d, const K8sOptions& o, std::vector<K8sFile>* out);

// The files as one YAML stream ("---" between documents), for standard output.
std::string k8s_stream(const std::vector<K8sFile>& files);

// Writes each file into `dir` (made if missing).
Status write_k8s(const std::string& dir, const std::vector<K8sFile>& files);

// The name of process i's Service and Pod: NAME-PROCESS as a DNS label.
std::string k8s_object_name(const std::string& prefix, const std::string& process);

}  // namespace sluice
