// render --k8s: the manifests of deploy/examples/cluster.yaml, read back
// with yaml-cpp. What a cluster would do with them is not tested here (no
// cluster); scripts/k8s-validate.sh checks them against the OpenAPI schemas.
#include "deploy/k8s.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace sluice {
namespace {

const std::string kCluster = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/cluster.yaml";
const std::string kImage = "registry.example.com/sluice:1.0";

Deployment load(const std::vector<std::string>& sets = {}) {
  Deployment d;
  Status st = load_deployment(kCluster, sets, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

K8sOptions options() {
  K8sOptions o;
  o.image = kImage;
  return o;
}

// Every document of the rendered stream, by "Kind/name".
std::map<std::string, YAML::Node> objects(const std::vector<K8sFile>& files) {
  std::map<std::string, YAML::Node> out;
  for (const YAML::Node& doc : YAML::LoadAll(k8s_stream(files))) {
    const std::string key = doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>();
    EXPECT_EQ(out.count(key), 0u) << key << " twice";
    out[key] = doc;
  }
  return out;
}

std::vector<K8sFile> render(const Deployment& d, const K8sOptions& o) {
  std::vector<K8sFile> files;
  Status st = render_k8s(d, o, &files);
  EXPECT_TRUE(st.ok()) << st.message();
  return files;
}

// The CPU request of a pod's program, which must equal its limit.
std::string cpu_of(const YAML::Node& pod) {
  const YAML::Node r = pod["spec"]["containers"][0]["resources"];
  EXPECT_EQ(r["requests"]["cpu"].as<std::string>(), r["limits"]["cpu"].as<std::string>());
  EXPECT_EQ(r["requests"]["memory"].as<std::string>(), r["limits"]["memory"].as<std::string>());
  return r["limits"]["cpu"].as<std::string>();
}

TEST(K8s, APodAndAHeadlessServicePerProcessAndOneConfigMap) {
  const Deployment d = load();
  auto objs = objects(render(d, options()));
  ASSERT_EQ(objs.size(), 1 + 2 * d.processes.size());
  ASSERT_TRUE(objs.count("ConfigMap/cluster-deployment"));
  const std::map<std::string, std::string> program = {
      {"loadgen", "sluice-loadgen"}, {"node-a", "sluice-node"}, {"node-b", "sluice-node"},
      {"sink", "sluice-sink"}};
  for (const auto& p : d.processes) {
    const std::string name = "cluster-" + p.name;
    ASSERT_TRUE(objs.count("Pod/" + name)) << name;
    ASSERT_TRUE(objs.count("Service/" + name)) << name;
    const YAML::Node pod = objs["Pod/" + name], svc = objs["Service/" + name];
    EXPECT_EQ(svc["spec"]["clusterIP"].as<std::string>(), "None");
    EXPECT_TRUE(svc["spec"]["publishNotReadyAddresses"].as<bool>());
    // The Service selects exactly its pod's labels.
    for (const auto& kv : svc["spec"]["selector"])
      EXPECT_EQ(pod["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(),
                kv.second.as<std::string>());
    const YAML::Node c = pod["spec"]["containers"][0];
    EXPECT_EQ(c["image"].as<std::string>(), kImage);
    const auto cmd = c["command"].as<std::vector<std::string>>();
    EXPECT_EQ(cmd, (std::vector<std::string>{program.at(p.name), "--deployment",
                                             "/etc/sluice/deployment.yaml", "--process", p.name,
                                             "--starts", "/var/run/sluice/starts"}));
    // The default guarantee restarts every process.
    EXPECT_EQ(pod["spec"]["restartPolicy"].as<std::string>(), "OnFailure");
    EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"].as<std::string>(), "metrics");
    EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/scrape"].as<std::string>(), "true");
    EXPECT_FALSE(pod["spec"]["hostNetwork"]);
    // Every process but the sink waits for its downstream before it starts.
    EXPECT_EQ(bool(pod["spec"]["initContainers"]), p.name != "sink") << name;
  }
}

TEST(K8s, TheConfigMapIsADeploymentTheParserAcceptsWithServiceNamesAsHosts) {
  const Deployment d = load();
  auto objs = objects(render(d, options()));
  const std::string text = objs["ConfigMap/cluster-deployment"]["data"]["deployment.yaml"].as<std::string>();
  Deployment back;
  Status st = parse_deployment(text, "configmap", {}, &back);
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << text;
  ASSERT_EQ(back.processes.size(), d.processes.size());
  EXPECT_TRUE(back.hosts.empty());
  EXPECT_EQ(back.metrics_address, "0.0.0.0");
  ASSERT_EQ(back.links.size(), d.links.size());
  for (size_t l = 0; l < back.links.size(); ++l) {
    const LinkOptions o = back.link_options(l, 0);
    // The sender reaches the receiver at its Service, on the port the
    // Service and the receiver's pod name after the link.
    EXPECT_EQ(o.host, "cluster-" + d.processes[d.links[l].to].name);
    EXPECT_EQ(o.listen, "0.0.0.0");
    EXPECT_EQ(o.port, d.link_port(l, 0));
    const std::string port_name = "link" + std::to_string(l) + "-0";
    bool in_service = false, in_pod = false;
    for (const auto& p : objs["Service/" + o.host]["spec"]["ports"])
      in_service |= p["name"].as<std::string>() == port_name && p["port"].as<uint32_t>() == o.port;
    for (const auto& p : objs["Pod/" + o.host]["spec"]["containers"][0]["ports"])
      in_pod |= p["name"].as<std::string>() == port_name && p["containerPort"].as<uint32_t>() == o.port;
    EXPECT_TRUE(in_service && in_pod) << port_name << " of " << o.host;
  }
  // Each pod's metrics port is the one its program binds (metrics_port + i).
  for (size_t i = 0; i < back.processes.size(); ++i) {
    const YAML::Node pod = objs["Pod/cluster-" + back.processes[i].name];
    EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/port"].as<uint32_t>(),
              back.metrics_port + i);
  }
}

TEST(K8s, RenderingIsDeterministic) {
  const std::string a = k8s_stream(render(load(), options()));
  const std::string b = k8s_stream(render(load(), options()));
  EXPECT_EQ(a, b);
  // The options reach the output: a different image is a different stream.
  K8sOptions o = options();
  o.image = "registry.example.com/sluice:2.0";
  EXPECT_NE(k8s_stream(render(load(), o)), a);
}

TEST(K8s, WholeCoresFromTheHostsCores) {
  // h2 (node-a) has 4 CPUs; h1 has 3, shared by loadgen and node-b: 1.5 each,
  // rounded up to 2; the sink sets 2.5 itself: 3; h4 gives none: --cpus.
  K8sOptions o = options();
  o.default_cpus = 5;
  const Deployment d = load({"hosts.1.cores=0-3", "hosts.0.cores=0-2", "processes.2.host=h1",
                             "processes.3.cores=2.5"});
  auto objs = objects(render(d, o));
  EXPECT_EQ(cpu_of(objs["Pod/cluster-node-a"]), "4");
  EXPECT_EQ(cpu_of(objs["Pod/cluster-loadgen"]), "2");
  EXPECT_EQ(cpu_of(objs["Pod/cluster-node-b"]), "2");
  EXPECT_EQ(cpu_of(objs["Pod/cluster-sink"]), "3");
  // The init container asks for the same, or the pod would not be Guaranteed.
  EXPECT_EQ(objs["Pod/cluster-node-a"]["spec"]["initContainers"][0]["resources"]["limits"]["cpu"]
                .as<std::string>(), "4");
  // The pods read the same counts as their `cores`, and no CPU numbers.
  Deployment k;
  ASSERT_TRUE(k8s_deployment(d, o, &k).ok());
  EXPECT_EQ(k.processes[1].cores, 4);
  EXPECT_EQ(k.processes[3].cores, 3);
  EXPECT_TRUE(k.hosts.empty());
  // With no cores anywhere, --cpus.
  objs = objects(render(load(), o));
  EXPECT_EQ(cpu_of(objs["Pod/cluster-node-a"]), "5");
}

TEST(K8s, PinStagesListsBecomeOnAndRestartBecomesOnFailure) {
  const Deployment d = load({"hosts.1.cores=0-3", "processes.1.pin_stages=\"1,2\"", "guarantee=none",
                             "acks=on", "processes.2.restart=on-failure"});
  Deployment k;
  ASSERT_TRUE(k8s_deployment(d, options(), &k).ok());
  EXPECT_TRUE(k.processes[1].pin_stages);
  EXPECT_TRUE(k.processes[1].stage_cpus.empty());
  auto objs = objects(render(d, options()));
  EXPECT_EQ(objs["Pod/cluster-node-b"]["spec"]["restartPolicy"].as<std::string>(), "OnFailure");
  EXPECT_EQ(objs["Pod/cluster-node-a"]["spec"]["restartPolicy"].as<std::string>(), "Never");
  // The kubelet restarts node-b's container in its pod without telling it;
  // --starts counts its starts in a file on a volume of the pod, not of the
  // container (an emptyDir), so the second start knows it is a restart.
  const YAML::Node spec = objs["Pod/cluster-node-b"]["spec"];
  const auto cmd = spec["containers"][0]["command"].as<std::vector<std::string>>();
  const auto at = std::find(cmd.begin(), cmd.end(), "--starts");
  ASSERT_NE(at, cmd.end());
  ASSERT_NE(at + 1, cmd.end());
  std::string volume;
  for (const auto& m : spec["containers"][0]["volumeMounts"])
    if ((at + 1)->starts_with(m["mountPath"].as<std::string>() + "/")) volume = m["name"].as<std::string>();
  ASSERT_FALSE(volume.empty()) << *(at + 1) << " is on no volume of the pod";
  bool empty_dir = false;
  for (const auto& v : spec["volumes"])
    if (v["name"].as<std::string>() == volume) empty_dir = bool(v["emptyDir"]);
  EXPECT_TRUE(empty_dir) << volume;
}

// A pod asks the kubelet for a restart where its process restarts: under
// the default guarantee every one, under guarantee: none none. One that
// would refuse to run started again (a sink without snapshots, exit 2 into
// CrashLoopBackOff) is not rendered at all: the file is refused first.
TEST(K8s, APodIsRestartedWhereItsProcessIs) {
  for (const auto& [sets, policy] : {std::make_pair(std::vector<std::string>{}, "OnFailure"),
                                     std::make_pair(std::vector<std::string>{"guarantee=none"}, "Never")}) {
    auto objs = objects(render(load(sets), options()));
    for (const char* name : {"loadgen", "node-a", "node-b", "sink"})
      EXPECT_EQ(objs[std::string("Pod/cluster-") + name]["spec"]["restartPolicy"].as<std::string>(), policy)
          << name;
  }
  Deployment d;
  const Status st = load_deployment(kCluster, {"guarantee=none", "acks=on", "restart=on-failure"}, &d);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("process 'sink' has restart: on-failure, but without checkpoint_interval_ms"),
            std::string::npos)
      << st.message();
}

TEST(K8s, RdmaResourceOnlyOnPodsWithFabricOrUcxLinksAndHostNetworkOnAll) {
  K8sOptions o = options();
  o.host_network = true;
  o.rdma_resource = "rdma/hca";
  // node-a -> node-b over fabric; the other two links stay tcp.
  auto objs = objects(render(load({"links.1.transport=fabric"}), o));
  for (const char* name : {"loadgen", "node-a", "node-b", "sink"}) {
    const YAML::Node pod = objs[std::string("Pod/cluster-") + name];
    EXPECT_TRUE(pod["spec"]["hostNetwork"].as<bool>()) << name;
    EXPECT_EQ(pod["spec"]["dnsPolicy"].as<std::string>(), "ClusterFirstWithHostNet");
    const bool rdma = std::string(name) == "node-a" || std::string(name) == "node-b";
    const YAML::Node c = pod["spec"]["containers"][0];
    EXPECT_EQ(bool(c["resources"]["limits"]["rdma/hca"]), rdma) << name;
    EXPECT_EQ(bool(c["resources"]["requests"]["rdma/hca"]), rdma) << name;
    EXPECT_EQ(bool(c["securityContext"]), rdma) << name;
    if (rdma) {
      EXPECT_EQ(c["securityContext"]["capabilities"]["add"][0].as<std::string>(), "IPC_LOCK");
      EXPECT_EQ(c["securityContext"]["runAsUser"].as<int>(), 0);
    }
  }
}

TEST(K8s, InstancesGetAPortEachAndMetricsOffDropsProbeAndAnnotations) {
  const Deployment d = load({"instances=2", "metrics=off"});
  auto objs = objects(render(d, options()));
  const YAML::Node pod = objs["Pod/cluster-node-a"];
  const YAML::Node ports = pod["spec"]["containers"][0]["ports"];
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0]["name"].as<std::string>(), "link0-0");
  EXPECT_EQ(ports[1]["name"].as<std::string>(), "link0-1");
  EXPECT_EQ(ports[1]["containerPort"].as<uint32_t>(), d.link_port(0, 1));
  EXPECT_FALSE(pod["spec"]["containers"][0]["readinessProbe"]);
  EXPECT_FALSE(pod["metadata"]["annotations"]["prometheus.io/scrape"]);
  // Without a metrics port to knock on, the wait is for the name.
  const std::string wait = pod["spec"]["initContainers"][0]["args"][0].as<std::string>();
  EXPECT_NE(wait.find("getent hosts cluster-node-b"), std::string::npos) << wait;
  EXPECT_FALSE(objs["Service/cluster-loadgen"]["spec"]["ports"]);  // nothing to reach it on
}

TEST(K8s, APodMonitorSelectsThePodsAndLabelsThemAsTheConsoleExpects) {
  K8sOptions o = options();
  o.pod_monitor = true;
  const Deployment d = load();
  auto objs = objects(render(d, o));
  ASSERT_TRUE(objs.count("PodMonitor/cluster"));
  const YAML::Node spec = objs["PodMonitor/cluster"]["spec"];
  // It selects every pod: each carries every label it matches.
  for (const auto& p : d.processes)
    for (const auto& kv : spec["selector"]["matchLabels"])
      EXPECT_EQ(objs["Pod/cluster-" + p.name]["metadata"]["labels"][kv.first.as<std::string>()]
                    .as<std::string>(), kv.second.as<std::string>());
  const YAML::Node ep = spec["podMetricsEndpoints"][0];
  EXPECT_EQ(ep["port"].as<std::string>(), "metrics");
  // `process` from the annotation holding the process's own name (Prometheus
  // turns sluice/process-name into sluice_process_name).
  EXPECT_EQ(ep["relabelings"][0]["targetLabel"].as<std::string>(), "process");
  EXPECT_EQ(ep["relabelings"][0]["sourceLabels"][0].as<std::string>(),
            "__meta_kubernetes_pod_annotation_sluice_process_name");
  EXPECT_TRUE(objs["Pod/cluster-node-a"]["metadata"]["annotations"]["sluice/process-name"]);
  EXPECT_EQ(ep["relabelings"][1]["targetLabel"].as<std::string>(), "role");
  // Off by default; refused with metrics off.
  EXPECT_FALSE(objects(render(d, options())).count("PodMonitor/cluster"));
  std::vector<K8sFile> files;
  EXPECT_NE(render_k8s(load({"metrics=off"}), o, &files).message().find("--pod-monitor"),
            std::string::npos);
}

TEST(K8s, BadOptionsAreNamed) {
  for (const char* image : {"", "Sluice:1.0", "sluice 1.0", "sluice:", "registry/Upper/x",
                            "sluice@sha256:abc", "-sluice", "sluice:-tag"}) {
    K8sOptions o = options();
    o.image = image;
    Status st = check_k8s_options(o);
    EXPECT_FALSE(st.ok()) << "'" << image << "'";
    EXPECT_NE(st.message().find("--image"), std::string::npos) << st.message();
  }
  for (const char* image : {"sluice", "localhost:5000/sluice:dev", "ghcr.io/some-org/sluice_x:1.0-rc.1",
                            "registry.example.com/a/b/sluice@sha256:"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
    K8sOptions o = options();
    o.image = image;
    EXPECT_TRUE(check_k8s_options(o).ok()) << image << ": " << check_k8s_options(o).message();
  }
  K8sOptions o = options();
  o.memory = "1GB";
  EXPECT_NE(check_k8s_options(o).message().find("--memory '1GB'"), std::string::npos);
  o = options();
  o.rdma_resource = "hca";
  EXPECT_NE(check_k8s_options(o).message().find("--rdma-resource 'hca'"), std::string::npos);
  o = options();
  o.name = "Cluster_1";
  std::vector<K8sFile> files;
  EXPECT_NE(render_k8s(load(), o, &files).message().find("--name 'Cluster_1'"), std::string::npos);
}

TEST(K8s, APortUsedTwiceInAPodOrOnANodeIsAnError) {
  // node-a listens on 17200 for link 0; its metrics port may not be that.
  K8sOptions o = options();
  Deployment k;
  Status st = k8s_deployment(load({"metrics_port=17199"}), o, &k);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("process 'node-a' port 17200 (link0-0) and process 'node-a' port "
                              "17200 (metrics) are one port of one pod"),
            std::string::npos)
      << st.message();
  // Metrics ports 17300.. clash with node-b's data port only on a shared node.
  EXPECT_TRUE(k8s_deployment(load({"metrics_port=17299"}), o, &k).ok());
  o.host_network = true;
  st = k8s_deployment(load({"metrics_port=17299"}), o, &k);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("on a node (--host-network)"), std::string::npos) << st.message();
}

TEST(K8s, TwoProcessesWithOneKubernetesNameAreAnError) {
  Deployment d;
  ASSERT_TRUE(parse_deployment("processes:\n"
                               "  - {name: gen, role: loadgen}\n"
                               "  - {name: node_a, role: node}\n"
                               "  - {name: node-a, role: node}\n"
                               "  - {name: sink, role: sink}\n",
                               "dup.yaml", {}, &d)
                  .ok());
  std::vector<K8sFile> files;
  Status st = render_k8s(d, options(), &files);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'node_a' and 'node-a' both make the Kubernetes name 'dup-node-a'"),
            std::string::npos)
      << st.message();
}

// The command line: a missing --image, or --image without its value, exits
// 2 and says so.
std::string run(const std::string& args, int* rc) {
  const std::string cmd = std::string(SLUICE_DEPLOY) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(K8s, TheCommandLineNamesAMissingImage) {
  int rc = 0;
  std::string out = run("render --k8s " + kCluster, &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--image is required"), std::string::npos) << out;
  out = run("render --k8s " + kCluster + " --image", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--image"), std::string::npos) << out;
  out = run("render --k8s " + kCluster + " --image 'Not An Image'", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--image 'Not An Image': not an image reference"), std::string::npos) << out;
  out = run("render " + kCluster + " --image " + kImage, &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--k8s"), std::string::npos) << out;
  // -o DIR: the same text as standard output, split into files.
  const std::string dir = ::testing::TempDir() + "k8s-out";
  out = run("render --k8s " + kCluster + " --image " + kImage + " -o " + dir, &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(dir + "/cluster-sink.yaml"), std::string::npos) << out;
  const YAML::Node pod = YAML::LoadAllFromFile(dir + "/cluster-sink.yaml").at(1);
  EXPECT_EQ(pod["kind"].as<std::string>(), "Pod");
}

}  // namespace
}  // namespace sluice
