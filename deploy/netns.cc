#include "deploy/netns.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace sluice {

std::string netns_prefix(pid_t pid) { return fmt::format("sl{}-", pid); }

namespace {

std::string ipv4_name(uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

// The capabilities this process has in effect (CapEff of /proc/self/status).
uint64_t effective_caps() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  return 0;
}

constexpr int kCapNetAdmin = 12;
constexpr int kCapSysAdmin = 21;

class NetnsExecutor : public Executor {
 public:
  NetnsExecutor(const Deployment& d, std::FILE* progress)
      : d_(d), progress_(progress), prefix_(netns_prefix(getpid())) {}
  ~NetnsExecutor() override { down(); }

  const char* name() const override { return "netns"; }

  Status check() const override {
    if (d_.hosts.empty())
      return Status::Error(fmt::format(
          "{}: the netns launcher runs each host of `hosts:` in a network namespace, and this "
          "file has no hosts: (deploy/examples/cluster.yaml has four)",
          d_.file));
    const uint64_t caps = effective_caps();
    std::vector<std::string> missing;
    if (!(caps >> kCapSysAdmin & 1)) missing.push_back("CAP_SYS_ADMIN");
    if (!(caps >> kCapNetAdmin & 1)) missing.push_back("CAP_NET_ADMIN");
    if (!missing.empty())
      return Status::Error(fmt::format(
          "the netns launcher makes network namespaces, veths and a bridge, which needs "
          "CAP_SYS_ADMIN and CAP_NET_ADMIN; this process lacks {} (run sluice-deploy as root)",
          fmt::join(missing, " and ")));
    for (const char* tool : {"ip", "tc"})
      if (find_tool(tool).empty())
        return Status::Error(fmt::format("the netns launcher needs `{}` (iproute2), found on "
                                         "neither PATH nor /usr/sbin, /sbin",
                                         tool));
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    uint32_t network = 0, mask = 0;
    for (size_t i = 0; i < d_.hosts.size(); ++i) {
      const HostConfig& h = d_.hosts[i];
      if (!h.cpus.empty() && h.cpus.back() >= hw)
        return Status::Error(fmt::format("{}: host '{}': cores {}: this machine has CPUs 0-{}",
                                         h.source_line, h.name, cpu_list_name(h.cpus), hw - 1));
      uint32_t a = 0;
      if (!parse_ipv4(h.address, &a))
        return Status::Error(fmt::format("{}: host '{}': the netns launcher gives each host an "
                                         "IPv4 address; '{}' is not one",
                                         h.source_line, h.name, h.address));
      if ((a >> 24) == 127)
        return Status::Error(fmt::format("{}: host '{}': {} is a loopback address, which every "
                                         "namespace has on its own lo; give the hosts addresses "
                                         "of a private subnet (10.77.0.1, 10.77.0.2, ...)",
                                         h.source_line, h.name, h.address));
      if (i == 0) {
        unsigned len = 24;
        if (!d_.subnet.empty()) parse_subnet(d_.subnet, &network, &len);
        mask = ~uint32_t{0} << (32 - len);
        prefix_len_ = len;
        if (d_.subnet.empty()) network = a & mask;
      }
      if ((a & mask) != network || a == network || a == (network | ~mask))
        return Status::Error(fmt::format(
            "{}: host '{}': {} is not a host address of {}/{} ({}); the netns hosts share one "
            "bridge, so one subnet: set `subnet:` or move the address",
            h.source_line, h.name, h.address, ipv4_name(network), prefix_len_,
            d_.subnet.empty() ? fmt::format("the /24 of the first host, {}", d_.hosts[0].name)
                              : "`subnet`"));
    }
    return {};
  }

  Status up() override {
    ip_ = find_tool("ip");
    tc_ = find_tool("tc");
    if (Status st = check(); !st) return st;
    remove_stale();
    Status st = make();
    if (!st) down();
    return st;
  }

  Status start(size_t i, const std::string& program, const std::vector<std::string>& args,
               const std::string& log_path, pid_t* pid) override {
    const HostConfig* h = d_.host_of(i);
    if (!h || made_.empty())
      return Status::Error(fmt::format("process '{}': no namespace for its host",
                                       d_.processes[i].name));
    return spawn_program(command(i, program, args), log_path, h->cpus, pid, /*child=*/true);
  }

  std::vector<std::string> command(size_t i, const std::string& program,
                                   const std::vector<std::string>& args) const override {
    const HostConfig* h = d_.host_of(i);
    std::vector<std::string> argv = {ip_path(), "netns", "exec", h ? ns_of(*h) : "?", program};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // What make() runs: the bridge's namespace, then per host its namespace,
  // veth pair, address and (with a rate) the two tbf qdiscs.
  std::vector<Step> up_steps() const override {
    std::vector<Step> s;
    const std::string br = bridge_ns();
    const std::string ip = ip_path(), tc = tc_path();
    s.push_back({{ip, "netns", "add", br}, "the LAN's namespace"});
    s.push_back({{ip, "-n", br, "link", "set", "lo", "up"}, ""});
    s.push_back({{ip, "-n", br, "link", "add", "br0", "type", "bridge"}, "its bridge"});
    s.push_back({{ip, "-n", br, "link", "set", "br0", "up"}, ""});
    for (size_t i = 0; i < d_.hosts.size(); ++i) {
      const HostConfig& h = d_.hosts[i];
      const std::string ns = ns_of(h);
      const std::string port = fmt::format("h{}", i);
      s.push_back({{ip, "netns", "add", ns}, "host " + h.name});
      s.push_back({{ip, "-n", ns, "link", "set", "lo", "up"}, ""});
      s.push_back({{ip, "-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
                   "its wire to the bridge"});
      s.push_back({{ip, "-n", br, "link", "set", port, "master", "br0", "up"}, ""});
      s.push_back({{ip, "-n", ns, "addr", "add", fmt::format("{}/{}", h.address, prefix_len()), "dev", "eth0"},
                   "its address"});
      s.push_back({{ip, "-n", ns, "link", "set", "eth0", "up"}, ""});
      if (h.rate_bps) {
        s.push_back({limit_argv(tc, ns, "eth0", h.rate_bps), "what it sends, at " + rate_name(h.rate_bps)});
        s.push_back({limit_argv(tc, br, port, h.rate_bps), "what it receives"});
      }
    }
    return s;
  }

  Status down() override {
    // Each host namespace takes its veth pair with it, the bridge's takes
    // the bridge. Newest first; every one is tried, and the first failure
    // is the one told.
    Status first;
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      Status st = run_command({ip_, "netns", "del", *it});
      if (st) say("removed namespace {}", *it);
      else if (first.ok()) first = Status::Error(fmt::format("namespace {} is left: {}", *it, st.message()));
    }
    made_.clear();
    return first;
  }

  std::vector<std::string> namespaces() const override { return made_; }

  std::string where(size_t i) const override {
    const HostConfig* h = d_.host_of(i);
    if (!h) return d_.processes[i].host;
    return fmt::format("{} ({}, netns {}{}{})", h->name, h->address, ns_of(*h),
                       h->cpus.empty() ? "" : ", cpus " + cpu_list_name(h->cpus),
                       h->rate_bps ? ", rate " + rate_name(h->rate_bps) : "");
  }

 private:
  template <class... A>
  void say(fmt::format_string<A...> f, A&&... a) {
    if (!progress_) return;
    fmt::print(progress_, "sluice-deploy: netns: {}\n", fmt::format(f, std::forward<A>(a)...));
    std::fflush(progress_);
  }

  std::string ns_of(const HostConfig& h) const { return prefix_ + h.name; }
  std::string bridge_ns() const { return prefix_ + "net"; }

  // A tbf qdisc of `bps` on `dev` of `ns`. The bucket holds 1 ms at the rate
  // (at least 128 KiB, so a GSO packet of 64 KiB passes whole); what waits
  // longer than 20 ms is dropped, and TCP slows to the rate.
  static std::vector<std::string> limit_argv(const std::string& tc, const std::string& ns,
                                             const std::string& dev, uint64_t bps) {
    const uint64_t burst = std::max<uint64_t>(bps / 8 / 1000, 128 * 1024);
    return {tc, "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
            fmt::format("{}bit", bps), "burst", std::to_string(burst), "latency", "20ms"};
  }

  std::string ip_path() const { return ip_.empty() || ip_ == "ip" ? or_name(find_tool("ip"), "ip") : ip_; }
  std::string tc_path() const { return tc_.empty() || tc_ == "tc" ? or_name(find_tool("tc"), "tc") : tc_; }
  static std::string or_name(const std::string& path, const char* name) {
    return path.empty() ? name : path;
  }
  // The prefix length of the hosts' subnet: `subnet`'s, else /24.
  unsigned prefix_len() const {
    unsigned len = 24;
    uint32_t network = 0;
    if (!d_.subnet.empty()) parse_subnet(d_.subnet, &network, &len);
    return len;
  }

  // Namespaces that a sluice-deploy which is gone left (killed with SIGKILL,
  // or its machine stopped mid-run: nothing ran its down()) stay until
  // removed, and a later run given the same pid could not make its own
  // ("File exists"). Each sl<PID>-... whose PID is no process, or is this
  // one (called before it makes any), is removed and said. A PID that some
  // other process holds now is left alone: it cannot be told from a live run.
  void remove_stale() {
    static const std::regex kOurs("sl([0-9]{1,9})-.+");
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/var/run/netns", ec)) {
      const std::string n = e.path().filename().string();
      std::smatch m;
      if (!std::regex_match(n, m, kOurs)) continue;
      const long pid = std::stol(m[1].str());
      const bool gone = pid == getpid() || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
      if (!gone) continue;
      if (Status st = run_command({ip_, "netns", "del", n}); st)
        say("removed namespace {}, left by sluice-deploy pid {}, which is gone", n, pid);
      else
        say("namespace {} was left by sluice-deploy pid {}, which is gone, and is not removed: {}", n, pid,
            st.message());
    }
  }

  // Runs up_steps(): plan prints the same list. A namespace is recorded as
  // made as soon as `ip netns add` succeeds, so down() removes it whatever
  // fails after.
  Status make() {
    for (const Step& s : up_steps()) {
      if (Status st = run_command(s.argv); !st) return st;
      if (s.argv.size() == 4 && s.argv[1] == "netns" && s.argv[2] == "add") made_.push_back(s.argv[3]);
      if (s.why == "its address")
        for (const HostConfig& h : d_.hosts)
          if (ns_of(h) == s.argv[2])
            say("host {}: namespace {}, {} on eth0{}", h.name, s.argv[2], s.argv[6],
                h.rate_bps ? ", rate " + rate_name(h.rate_bps) : "");
    }
    return {};
  }

  const Deployment& d_;
  std::FILE* progress_;
  const std::string prefix_;
  std::string ip_ = "ip", tc_ = "tc";
  mutable unsigned prefix_len_ = 24;
  std::vector<std::string> made_;  // namespaces made, oldest first
};

}  // namespace

std::unique_ptr<Executor> make_netns_executor(const Deployment& d, std::FILE* progress) {
  return std::make_unique<NetnsExecutor>(d, progress);
}

}  // namespace sluice
