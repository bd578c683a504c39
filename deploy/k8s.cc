// Kubernetes manifests for a deployment: see k8s.h.
#include "deploy/k8s.h"

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>


namespace sluice {

namespace fs = std::filesystem;

namespace {

constexpr const char* kConfigDir = "/etc/sluice";
constexpr const char* kConfigKey = "deployment.yaml";
constexpr const char* kRunDir = "/var/run/sluice";

const char* program_of(Role r) {
  switch (r) {
    case Role::kLoadgen: return "sluice-loadgen";
    case Role::kNode: return "sluice-node";
    case Role::kSink: return "sluice-sink";
    case Role::kPublisher:
    case Role::kSubscriber: break;  // refused by render_k8s
  }
  return "sluice-node";
}

// A DNS-1035 label from any name: lowercase, anything but [a-z0-9-] as '-',
// no '-' at either end.
std::string dns_label(const std::string& s) {
  std::string out;
  for (char c : s) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (std::isalnum(static_cast<unsigned char>(l)) != 0) ? l : '-';
  }
  const size_t b = out.find_first_not_of('-');
  if (b == std::string::npos) return {};
  return out.substr(b, out.find_last_not_of('-') - b + 1);
}

bool is_dns_label(const std::string& s) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

// The objects' prefix: --name, else the deployment file's stem.
Status prefix_of(const Deployment& d, const K8sOptions& o, std::string* out) {
  if (!o.name.empty()) {
    if (!is_dns_label(o.name) || o.name.size() > 40)
      return Status::Error(fmt::format(
          "--name '{}': must be a DNS label of at most 40 characters (lowercase letters, digits "
          "and '-', starting with a letter), as it prefixes every object's name",
          o.name));
    *out = o.name;
    return {};
  }
  std::string stem = dns_label(fs::path(d.file).stem().string());
  if (stem.empty() || !std::isalpha(static_cast<unsigned char>(stem[0]))) stem = "sluice-" + stem;
  while (!stem.empty() && stem.back() == '-') stem.pop_back();
  if (stem.size() > 40) stem.resize(40);
  while (!stem.empty() && stem.back() == '-') stem.pop_back();
  *out = stem;
  return {};
}

// Whole cores for process i: its `cores`, or its host's `cores` shared among
// the processes on it, rounded up; else the default. Never this machine's
// CPU count, so the output does not depend on where it is rendered.
unsigned whole_cores(const Deployment& d, size_t i, const K8sOptions& o) {
  const HostConfig* h = d.host_of(i);
  if (d.processes[i].cores > 0 || (h && !h->cpus.empty()))
    return std::max(1u, static_cast<unsigned>(std::ceil(d.cores_of(i) - 1e-9)));
  return o.default_cpus;
}

bool uses_rdma_carrier(const Deployment& d, size_t i) {
  for (const auto& l : d.links)
    if ((l.from == i || l.to == i) && (l.options.transport == "fabric" || l.options.transport == "ucx"))
      return true;
  return false;
}

void labels(YAML::Emitter& e, const std::string& prefix, const std::string& component,
            const std::string& object) {
  e << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "app.kubernetes.io/name" << YAML::Value << "sluice";
  e << YAML::Key << "app.kubernetes.io/instance" << YAML::Value << prefix;
  e << YAML::Key << "app.kubernetes.io/component" << YAML::Value << component;
  if (!object.empty()) e << YAML::Key << "sluice/process" << YAML::Value << object;
  e << YAML::EndMap;
}

// The ports process i listens on: one per input link and instance, then metrics.
struct Port {
  std::string name;
  uint32_t port;
};

std::vector<Port> ports_of(const Deployment& d, size_t i) {
  std::vector<Port> ports;
  for (size_t l : d.inputs_of(i))
    for (uint32_t k = 0; k < d.instances; ++k)
      ports.push_back({fmt::format("link{}-{}", l, k), d.link_port(l, k)});
  if (d.metrics) ports.push_back({"metrics", static_cast<uint32_t>(d.metrics_port + i)});
  return ports;
}

std::string document(const YAML::Emitter& e) { return std::string(e.c_str()) + "\n"; }

std::string configmap(const std::string& prefix, const std::string& text) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "apiVersion" << YAML::Value << "v1";
  e << YAML::Key << "kind" << YAML::Value << "ConfigMap";
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << prefix + "-deployment";
  labels(e, prefix, "deployment", "");
  e << YAML::EndMap;
  e << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << kConfigKey << YAML::Value << YAML::Literal << text;
  e << YAML::EndMap << YAML::EndMap;
  return document(e);
}

std::string service(const Deployment& d, size_t i, const std::string& prefix,
                    const std::string& object) {
  const ProcessConfig& p = d.processes[i];
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "apiVersion" << YAML::Value << "v1";
  e << YAML::Key << "kind" << YAML::Value << "Service";
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << object;
  labels(e, prefix, role_name(p.role), object);
  e << YAML::EndMap;
  e << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  // Headless: the name resolves to the pod's own address (no proxy on the
  // data path), and before the pod is ready, so upstreams can connect.
  e << YAML::Key << "clusterIP" << YAML::Value << "None";
  e << YAML::Key << "publishNotReadyAddresses" << YAML::Value << true;
  e << YAML::Key << "selector" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "app.kubernetes.io/instance" << YAML::Value << prefix;
  e << YAML::Key << "sluice/process" << YAML::Value << object;
  e << YAML::EndMap;
  const std::vector<Port> ports = ports_of(d, i);
  if (!ports.empty()) {
    e << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq;
    for (const Port& port : ports) {
      e << YAML::BeginMap;
      e << YAML::Key << "name" << YAML::Value << port.name;
      e << YAML::Key << "port" << YAML::Value << port.port;
      e << YAML::Key << "targetPort" << YAML::Value << port.name;
      e << YAML::Key << "protocol" << YAML::Value << "TCP";
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::EndMap << YAML::EndMap;
  return document(e);
}

void resources(YAML::Emitter& e, unsigned cpus, const K8sOptions& o, bool rdma) {
  e << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  for (const char* what : {"requests", "limits"}) {
    e << YAML::Key << what << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "cpu" << YAML::Value << YAML::DoubleQuoted << std::to_string(cpus);
    e << YAML::Key << "memory" << YAML::Value << YAML::DoubleQuoted << o.memory;
    if (rdma) e << YAML::Key << o.rdma_resource << YAML::Value << YAML::DoubleQuoted << "1";
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

// The init container's script: wait until every downstream process answers
// on its metrics port (its exporter starts before its listeners, and a
// sender retries connecting for connect_timeout_ms), or with metrics off
// until its name resolves.
std::string wait_script(const Deployment& d, size_t i, const std::vector<std::string>& objects) {
  std::set<size_t> downstream;
  for (size_t l : d.outputs_of(i)) downstream.insert(d.links[l].to);
  std::string s;
  for (size_t j : downstream) {
    if (d.metrics) {
      const uint32_t port = d.metrics_port + j;
      s += fmt::format(
          "until (exec 3<>/dev/tcp/{0}/{1}) 2>/dev/null; do echo 'waiting for {0}:{1}'; sleep 1; "
          "done\n",
          objects[j], port);
    } else {
      s += fmt::format(
          "until getent hosts {0} >/dev/null; do echo 'waiting for {0}'; sleep 1; done\n",
          objects[j]);
    }
  }
  if (!s.empty()) s.pop_back();  // the last '\n'
  return s;
}

std::string pod(const Deployment& d, size_t i, const std::string& prefix,
                const std::vector<std::string>& objects, const K8sOptions& o) {
  const ProcessConfig& p = d.processes[i];
  const std::string& object = objects[i];
  const unsigned cpus = static_cast<unsigned>(std::lround(p.cores));
  const bool rdma = !o.rdma_resource.empty() && uses_rdma_carrier(d, i);
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "apiVersion" << YAML::Value << "v1";
  e << YAML::Key << "kind" << YAML::Value << "Pod";
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << object;
  labels(e, prefix, role_name(p.role), object);
  e << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "sluice/process-name" << YAML::Value << YAML::DoubleQuoted << p.name;
  if (d.metrics) {
    e << YAML::Key << "prometheus.io/scrape" << YAML::Value << YAML::DoubleQuoted << "true";
    e << YAML::Key << "prometheus.io/port" << YAML::Value << YAML::DoubleQuoted
      << std::to_string(d.metrics_port + i);
    e << YAML::Key << "prometheus.io/path" << YAML::Value << YAML::DoubleQuoted << "/metrics";
  }
  e << YAML::EndMap;
  e << YAML::EndMap;

  e << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  // A run ends (the load generator's duration_s or tuples): a pod that
  // finished must not be started again, one that failed only with restart.
  // (One that would refuse to run started again, a sink or stateful node
  // without snapshots, looping into CrashLoopBackOff, cannot be asked for:
  // the parser refuses its restart, validate_restarts.)
  e << YAML::Key << "restartPolicy" << YAML::Value << (restarts_on_failure(d, p) ? "OnFailure" : "Never");
  e << YAML::Key << "enableServiceLinks" << YAML::Value << false;
  if (o.host_network) {
    e << YAML::Key << "hostNetwork" << YAML::Value << true;
    // The Services' names still resolve on the node's network.
    e << YAML::Key << "dnsPolicy" << YAML::Value << "ClusterFirstWithHostNet";
  }
  const std::string script = wait_script(d, i, objects);
  if (!script.empty()) {
    e << YAML::Key << "initContainers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    e << YAML::Key << "name" << YAML::Value << "wait-downstream";
    e << YAML::Key << "image" << YAML::Value << o.image;
    e << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq << "bash" << "-c"
      << YAML::EndSeq;
    e << YAML::Key << "args" << YAML::Value << YAML::BeginSeq << YAML::Literal << script
      << YAML::EndSeq;
    // The same as the program's: an init container without them would make
    // the pod Burstable, and the static CPU manager would not pin it.
    resources(e, cpus, o, false);
    e << YAML::EndMap << YAML::EndSeq;
  }
  e << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << role_name(p.role);
  e << YAML::Key << "image" << YAML::Value << o.image;
  // No --summary: the program then prints its JSON summary as the last line
  // of its output, which `kubectl logs` still reads after the pod ended (a
  // file in the pod would go with it). --starts: the kubelet restarts a
  // container without saying so; the count on the pod's emptyDir, which
  // outlives the container, does (a restarted sink without snapshots then
  // refuses to run instead of counting every earlier tuple as lost).
  e << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq << program_of(p.role)
    << "--deployment" << std::string(kConfigDir) + "/" + kConfigKey << "--process"
    << YAML::DoubleQuoted << p.name << "--starts" << std::string(kRunDir) + "/starts"
    << YAML::EndSeq;
  e << YAML::Key << "workingDir" << YAML::Value << kRunDir;
  const std::vector<Port> ports = ports_of(d, i);
  if (!ports.empty()) {
    e << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq;
    for (const Port& port : ports) {
      e << YAML::Flow << YAML::BeginMap;
      e << YAML::Key << "name" << YAML::Value << port.name;
      e << YAML::Key << "containerPort" << YAML::Value << port.port;
      e << YAML::Key << "protocol" << YAML::Value << "TCP";
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  resources(e, cpus, o, rdma);
  if (d.metrics) {
    e << YAML::Key << "readinessProbe" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "httpGet" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "path" << YAML::Value << "/metrics";
    e << YAML::Key << "port" << YAML::Value << "metrics";
    e << YAML::EndMap;
    e << YAML::Key << "periodSeconds" << YAML::Value << 2;
    e << YAML::Key << "failureThreshold" << YAML::Value << 3;
    e << YAML::EndMap;
  }
  if (rdma) {
    // Registering memory with the NIC locks it; a capability the pod adds
    // reaches only root's effective set (the image runs as uid 10001).
    e << YAML::Key << "securityContext" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "runAsUser" << YAML::Value << 0;
    e << YAML::Key << "capabilities" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "add" << YAML::Value << YAML::Flow << YAML::BeginSeq << "IPC_LOCK"
      << YAML::EndSeq;
    e << YAML::EndMap << YAML::EndMap;
  }
  e << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "deployment"
    << YAML::Key << "mountPath" << YAML::Value << kConfigDir << YAML::Key << "readOnly"
    << YAML::Value << true << YAML::EndMap;
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "run"
    << YAML::Key << "mountPath" << YAML::Value << kRunDir << YAML::EndMap;
  e << YAML::EndSeq;
  e << YAML::EndMap << YAML::EndSeq;  // the container

  e << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq;
  e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "deployment";
  e << YAML::Key << "configMap" << YAML::Value << YAML::BeginMap << YAML::Key << "name"
    << YAML::Value << prefix + "-deployment" << YAML::EndMap << YAML::EndMap;
  e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "run";
  e << YAML::Key << "emptyDir" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap
    << YAML::EndMap;
  e << YAML::EndSeq;
  e << YAML::EndMap << YAML::EndMap;
  return document(e);
}

// For the Prometheus Operator: every pod's metrics port, each second (the
// shipped rules take rates over 5 s), with the labels the shipped console
// and dashboard select on, `process` and `role`, as `run --prometheus` sets.
std::string pod_monitor(const std::string& prefix) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "apiVersion" << YAML::Value << "monitoring.coreos.com/v1";
  e << YAML::Key << "kind" << YAML::Value << "PodMonitor";
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << prefix;
  labels(e, prefix, "monitoring", "");
  e << YAML::EndMap;
  e << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "selector" << YAML::Value << YAML::BeginMap << YAML::Key << "matchLabels"
    << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "app.kubernetes.io/name" << YAML::Value << "sluice";
  e << YAML::Key << "app.kubernetes.io/instance" << YAML::Value << prefix;
  e << YAML::EndMap << YAML::EndMap;
  e << YAML::Key << "podMetricsEndpoints" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  e << YAML::Key << "port" << YAML::Value << "metrics";
  e << YAML::Key << "path" << YAML::Value << "/metrics";
  e << YAML::Key << "interval" << YAML::Value << "1s";
  e << YAML::Key << "relabelings" << YAML::Value << YAML::BeginSeq;
  e << YAML::BeginMap << YAML::Key << "sourceLabels" << YAML::Value << YAML::Flow << YAML::BeginSeq
    << "__meta_kubernetes_pod_annotation_sluice_process_name" << YAML::EndSeq;
  e << YAML::Key << "targetLabel" << YAML::Value << "process" << YAML::EndMap;
  e << YAML::BeginMap << YAML::Key << "sourceLabels" << YAML::Value << YAML::Flow << YAML::BeginSeq
    << "__meta_kubernetes_pod_label_app_kubernetes_io_component" << YAML::EndSeq;
  e << YAML::Key << "targetLabel" << YAML::Value << "role" << YAML::EndMap;
  e << YAML::EndSeq;
  e << YAML::EndMap << YAML::EndSeq;
  e << YAML::EndMap << YAML::EndMap;
  return document(e);
}

}  // namespace

std::string k8s_object_name(const std::string& prefix, const std::string& process) {
  return prefix + "-" + dns_label(process);
}

Status check_k8s_options(const K8sOptions& o) {
  // distribution/reference's grammar: [DOMAIN[:PORT]/]PATH[:TAG][@DIGEST],
  // the path's components lowercase.
  static const std::regex image_re(
      "(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
      "(?::[0-9]+)?/)?"
      "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
      "(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?");
  if (o.image.empty())
    return Status::Error("--image is required: the container image with the sluice programs "
                         "(the repository's Dockerfile builds one), e.g. "
                         "registry.example.com/sluice:1.0");
  if (o.image.size() > 255 || !std::regex_match(o.image, image_re))
    return Status::Error(fmt::format(
        "--image '{}': not an image reference; expected [REGISTRY[:PORT]/]REPOSITORY[:TAG]"
        "[@sha256:DIGEST] with a lowercase repository, e.g. registry.example.com/sluice:1.0",
        o.image));
  static const std::regex memory_re("[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?");
  if (!std::regex_match(o.memory, memory_re) || std::strtod(o.memory.c_str(), nullptr) <= 0)
    return Status::Error(fmt::format(
        "--memory '{}': expected a positive Kubernetes quantity such as 512Mi, 2Gi or 1G",
        o.memory));
  if (o.default_cpus == 0) return Status::Error("--cpus: must be at least 1 (whole cores)");
  if (!o.rdma_resource.empty()) {
    static const std::regex resource_re(
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
        "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
    const size_t slash = o.rdma_resource.find('/');
    if (!std::regex_match(o.rdma_resource, resource_re) ||
        o.rdma_resource.size() - slash - 1 > 63 || o.rdma_resource.rfind("kubernetes.io/", 0) == 0 ||
        o.rdma_resource.rfind("requests.", 0) == 0)
      return Status::Error(fmt::format(
          "--rdma-resource '{}': expected an extended resource name DOMAIN/NAME, as a device "
          "plugin advertises it (rdma/hca, rdma/rdma_shared_device_a, nvidia.com/hostdev)",
          o.rdma_resource));
  }
  return {};
}

Status k8s_deployment(const Deployment& d, const K8sOptions& o, Deployment* out) {
  if (Status st = check_k8s_options(o); !st) return st;
  std::string prefix;
  if (Status st = prefix_of(d, o, &prefix); !st) return st;
  Deployment k = d;
  std::map<std::string, std::string> taken;  // object name -> process
  for (size_t i = 0; i < k.processes.size(); ++i) {
    ProcessConfig& p = k.processes[i];
    const std::string object = k8s_object_name(prefix, p.name);
    if (object.size() > 63 || !is_dns_label(object))
      return Status::Error(fmt::format(
          "{}: process '{}': its Service name '{}' is not a DNS label of at most 63 characters; "
          "give a shorter --name",
          p.source_line, p.name, object));
    if (auto [it, fresh] = taken.emplace(object, p.name); !fresh)
      return Status::Error(fmt::format(
          "{}: processes '{}' and '{}' both make the Kubernetes name '{}' (names are lowercased, "
          "anything but letters, digits and '-' becomes '-'); rename one",
          p.source_line, it->second, p.name, object));
    p.cores = whole_cores(d, i, o);
    // Reached at its Service's name; binds every address of its pod.
    p.host = object;
    p.host_name.clear();
    p.listen = "0.0.0.0";
    // CPU numbers of a machine mean nothing in a container: the CPU manager
    // picks its cores, and `on` spreads the stages over them.
    if (!p.stage_cpus.empty()) {
      p.stage_cpus.clear();
      p.pin_stages = true;
    }
  }
  k.hosts.clear();
  k.subnet.clear();
  k.host_rate_bps = 0;
  k.launcher = "local";
  if (k.metrics) {
    k.metrics_address = "0.0.0.0";
    if (k.metrics_port == 0) k.metrics_port = o.metrics_port;
    if (size_t(k.metrics_port) + k.processes.size() - 1 > 65535)
      return Status::Error(fmt::format("metrics_port {}: process {} would be past port 65535",
                                       k.metrics_port, k.processes.size() - 1));
  }
  // Every port a pod listens on is its own (a data port may not be a
  // metrics port); with --host-network, pods may share a node, so every
  // port of the deployment is.
  {
    std::map<std::pair<size_t, uint32_t>, std::string> used;  // (pod, port) -> what
    for (size_t i = 0; i < k.processes.size(); ++i)
      for (const Port& port : ports_of(k, i)) {
        const size_t where = o.host_network ? 0 : i;
        const std::string what = fmt::format("process '{}' port {} ({})", k.processes[i].name,
                                             port.port, port.name);
        if (auto [it, fresh] = used.emplace(std::make_pair(where, port.port), what); !fresh)
          return Status::Error(fmt::format(
              "{} and {} are one port{}; set metrics_port (or --metrics-port) or the ports "
              "apart",
              it->second, what, o.host_network ? " on a node (--host-network)" : " of one pod"));
      }
  }
  // What the pods read is what was checked: the text, parsed again.
  const std::string text = dump_deployment(k);
  const std::string name = d.file + " (for Kubernetes)";
  Deployment back;
  if (Status st = parse_deployment(text, name, {}, &back); !st)
    return Status::Error(fmt::format("the deployment as Kubernetes runs it is not valid: {}",
                                     st.message()));
  back.file = d.file;
  *out = std::move(back);
  return {};
}

Status render_k8s(const Deployment& d, const K8sOptions& o, std::vector<K8sFile>* out) {
  for (const auto& p : d.processes)
    if (is_app(p.role))
      return Status::Error(fmt::format("process '{}' is a {}, an application's end: there is no program "
                                       "to render a pod for; run the graph with sluice-deploy run or up",
                                       p.name, role_name(p.role)));
  Deployment k;
  if (Status st = k8s_deployment(d, o, &k); !st) return st;
  std::string prefix;
  if (Status st = prefix_of(d, o, &prefix); !st) return st;
  std::vector<std::string> objects;
  for (const auto& p : k.processes) objects.push_back(k8s_object_name(prefix, p.name));
  out->clear();
  std::string text = dump_deployment(k);
  out->push_back({prefix + "-deployment.yaml", configmap(prefix, text)});
  for (size_t i = 0; i < k.processes.size(); ++i)
    out->push_back({objects[i] + ".yaml",
                    service(k, i, prefix, objects[i]) + "---\n" + pod(k, i, prefix, objects, o)});
  if (o.pod_monitor) {
    if (!k.metrics)
      return Status::Error(fmt::format("--pod-monitor: {} sets metrics: off, so there is nothing "
                                       "to scrape", d.file));
    out->push_back({prefix + "-podmonitor.yaml", pod_monitor(prefix)});
  }
  return {};
}

std::string k8s_stream(const std::vector<K8sFile>& files) {
  std::string s;
  for (const auto& f : files) {
    s += "---\n# " + f.path + "\n";
    s += f.yaml;
  }
  return s;
}

Status write_k8s(const std::string& dir, const std::vector<K8sFile>& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Error(fmt::format("-o {}: cannot make the directory: {}", dir, ec.message()));
  for (const auto& f : files) {
    const fs::path path = fs::path(dir) / f.path;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << f.yaml;
    out.close();
    if (!out) return Status::Error(fmt::format("{}: cannot write it", path.string()));
  }
  return {};
}

}  // namespace sluice
