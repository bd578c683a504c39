#include "deploy/prometheus.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/file.h"
#include "deploy/executor.h"

namespace fs = std::filesystem;

namespace sluice {
namespace {

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A free TCP port on 127.0.0.1, as the kernel hands one out. (Another
// program may take it before Prometheus binds it; then start() says so.)
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace

Status http_get(const std::string& hostport, const std::string& path, int timeout_ms,
                std::string* body) {
  body->clear();
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return Status::Error(fmt::format("{}: no port", hostport));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(hostport.c_str() + colon + 1)));
  if (inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &a.sin_addr) != 1)
    return Status::Error(fmt::format("{}: not an IPv4 address and port", hostport));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Error(fmt::format("socket: {}", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Status::Error(fmt::format("connect {}: {}", hostport, std::strerror(errno)));
  const std::string req =
      fmt::format("GET {} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n\r\n", path, hostport);
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    return Status::Error(fmt::format("send to {}: {}", hostport, std::strerror(errno)));
  std::string resp;
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      resp.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    return Status::Error(fmt::format("GET http://{}{}: {}", hostport, path,
                                     errno == EAGAIN ? "no answer in time" : std::strerror(errno)));
  }
  const size_t head_end = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/", 0) != 0 || head_end == std::string::npos)
    return Status::Error(fmt::format("GET http://{}{}: not an HTTP answer", hostport, path));
  const std::string status_line = resp.substr(0, resp.find("\r\n"));
  *body = resp.substr(head_end + 4);
  if (status_line.find(" 200") == std::string::npos)
    return Status::Error(fmt::format("GET http://{}{}: {}: {}", hostport, path, status_line,
                                     body->substr(0, 200)));
  return {};
}

std::string find_prometheus() {
  std::string p = find_tool("prometheus");
  if (p.empty() && ::access("/usr/bin/prometheus", X_OK) == 0) p = "/usr/bin/prometheus";
  return p;
}

std::unique_ptr<PrometheusServer> PrometheusServer::start(const std::string& run_dir,
                                                          const std::vector<Target>& targets,
                                                          const std::string& rules,
                                                          const std::string& consoles, Status* st) {
  const std::string bin = find_prometheus();
  if (bin.empty()) {
    *st = Status::Error(
        "--prometheus: no `prometheus` on PATH or in /usr/bin (Debian's package `prometheus`; "
        "scripts/setup.sh installs it)");
    return nullptr;
  }
  std::unique_ptr<PrometheusServer> p(new PrometheusServer);
  // A run directory used again keeps the earlier runs' samples, under the
  // same process names: figures() reads only this run's.
  p->since_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const fs::path dir = fs::path(run_dir) / "prometheus";
  std::error_code ec;
  fs::create_directories(dir / "data", ec);
  if (ec) {
    *st = Status::Error(fmt::format("--prometheus: cannot make {}: {}", dir.string(), ec.message()));
    return nullptr;
  }
  p->dir_ = dir.string();
  if (!rules.empty() && !fs::exists(rules)) {
    *st = Status::Error(fmt::format("--prometheus: no rules file {}", rules));
    return nullptr;
  }
  // One scrape a second: a run lasts seconds. Every series gets the
  // process's name and role.
  std::string yml = fmt::format(
      "# Written by sluice-deploy for the run in {}.\n"
      "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n",
      run_dir);
  if (!rules.empty()) yml += fmt::format("rule_files:\n  - {}\n", fs::absolute(rules).string());
  yml += "scrape_configs:\n  - job_name: sluice\n    static_configs:\n";
  for (const Target& t : targets)
    yml += fmt::format("      - targets: ['{}']\n        labels: {{process: '{}', role: '{}'}}\n",
                       t.hostport, t.process, t.role);
  if (Status w = write_atomically(dir / "prometheus.yml", yml); !w) {
    *st = w;
    return nullptr;
  }
  p->port_ = free_port();
  std::vector<std::string> argv = {bin,
                                   "--config.file=" + (dir / "prometheus.yml").string(),
                                   "--storage.tsdb.path=" + (dir / "data").string(),
                                   fmt::format("--web.listen-address=127.0.0.1:{}", p->port_),
                                   "--log.level=warn"};
  if (!consoles.empty()) {
    argv.push_back("--web.console.templates=" + fs::absolute(consoles).string());
    argv.push_back("--web.console.libraries=" + fs::absolute(consoles).string());
  }
  const std::string log = (fs::path(run_dir) / "prometheus.log").string();
  if (Status s = spawn_program(argv, log, {}, &p->pid_); !s) {
    *st = Status::Error(fmt::format("--prometheus: cannot start {}: {}", bin, s.message()));
    return nullptr;
  }
  // Ready within 20 s, or it says why in its log.
  const double until = mono_s() + 20;
  for (;;) {
    std::string body;
    if (http_get(fmt::format("127.0.0.1:{}", p->port_), "/-/ready", 500, &body).ok()) break;
    int status = 0;
    if (::waitpid(p->pid_, &status, WNOHANG) == p->pid_) {
      p->pid_ = -1;
      *st = Status::Error(fmt::format("--prometheus: {} exited before it was ready; see {}", bin, log));
      return nullptr;
    }
    if (mono_s() > until) {
      *st = Status::Error(fmt::format("--prometheus: {} not ready after 20 s; see {}", bin, log));
      return nullptr;  // the destructor stops it
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Prometheus applies its targets, static ones too, on a 5 s tick: the run
  // starts once every target is active, so the first seconds are scraped.
  const double targets_until = mono_s() + 15;
  for (;;) {
    std::string body;
    if (p->get("/api/v1/targets?state=active", &body).ok()) {
      size_t n = 0;
      for (size_t at = body.find("\"scrapeUrl\""); at != std::string::npos;
           at = body.find("\"scrapeUrl\"", at + 1))
        ++n;
      if (n >= targets.size()) break;
    }
    if (mono_s() > targets_until) {
      *st = Status::Error(fmt::format("--prometheus: {} did not take its {} targets in 15 s; see {}",
                                      bin, targets.size(), log));
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return p;
}

PrometheusServer::~PrometheusServer() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGTERM);
  const double until = mono_s() + 5;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (mono_s() > until) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string PrometheusServer::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

Status PrometheusServer::get(const std::string& path_and_query, std::string* body) const {
  return http_get(fmt::format("127.0.0.1:{}", port_), path_and_query, 5000, body);
}

uint16_t free_ports(const std::string& address, size_t n) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) return 0;
  for (int attempt = 0; attempt < 50; ++attempt) {
    // A start the kernel picks, then the ones after it.
    std::vector<int> held;
    uint16_t first = 0;
    bool all = true;
    for (size_t i = 0; i < n && all; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      held.push_back(fd);
      a.sin_port = htons(i == 0 ? 0 : static_cast<uint16_t>(first + i));
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        all = false;
        break;
      }
      if (i == 0) {
        socklen_t len = sizeof a;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        first = ntohs(a.sin_port);
        if (first + n > 65535) all = false;
      }
    }
    for (int fd : held) ::close(fd);
    if (all && held.size() == n) return first;
  }
  return 0;
}

Status PrometheusServer::figures(std::map<std::string, PrometheusFigures>* out) const {
  // Every sample of the counters the figures need, per process: a range
  // selector in an instant query answers the raw samples.
  const std::string q =
      "{__name__=~\"sluice_cpu_seconds_total|sluice_events_total|sluice_bytes_total|"
      "sluice_clock_hertz\",job=\"sluice\"}[1h]";
  std::string body;
  if (Status st = get("/api/v1/query?query=" + url_encode(q), &body); !st) return st;
  YAML::Node root;
  try {
    root = YAML::Load(body);
  } catch (const YAML::Exception& e) {
    return Status::Error(fmt::format("Prometheus's answer is not JSON: {}", e.what()));
  }
  if (!root["status"] || root["status"].as<std::string>() != "success")
    return Status::Error(fmt::format("Prometheus's query failed: {}", body.substr(0, 300)));
  // Per process: time -> summed values.
  struct Series {
    std::map<double, double> cpu_user, cpu_system, events, bytes_in, bytes_out;
    double clock_hz = 0;
  };
  std::map<std::string, Series> by;
  for (const auto& r : root["data"]["result"]) {
    const auto m = r["metric"];
    if (!m["process"]) continue;
    const std::string name = m["__name__"].as<std::string>();
    Series& s = by[m["process"].as<std::string>()];
    std::map<double, double>* into = nullptr;
    if (name == "sluice_cpu_seconds_total") {
      const std::string mode = m["mode"] ? m["mode"].as<std::string>() : "";
      into = mode == "user" ? &s.cpu_user : mode == "system" ? &s.cpu_system : nullptr;
    } else if (name == "sluice_events_total") {
      into = &s.events;  // in and out added, as the summary counts a process's events
    } else if (name == "sluice_bytes_total") {
      const std::string dir = m["direction"] ? m["direction"].as<std::string>() : "";
      into = dir == "in" ? &s.bytes_in : &s.bytes_out;
    }
    for (const auto& v : r["values"]) {
      const double t = v[0].as<double>();
      if (t < since_) continue;  // an earlier run's, in a run directory used again
      const double x = std::stod(v[1].as<std::string>());
      if (name == "sluice_clock_hertz") s.clock_hz = x;
      else if (into) (*into)[t] += x;
    }
  }
  for (const auto& [process, s] : by) {
    // The span: from the first scrape that saw an event to the last one
    // taken while events still came, so that both ends lie inside the
    // stream: a scrape after the stream ended (a process drains, writes its
    // summary, waits for its peers) would add idle seconds to the Gb/s.
    // A process seen only at rest spans to its last scrape.
    auto first = std::find_if(s.events.begin(), s.events.end(), [](const auto& e) { return e.second > 0; });
    if (first == s.events.end() || s.clock_hz <= 0) continue;
    const double total = std::prev(s.events.end())->second;
    auto last = std::find_if(first, s.events.end(), [&](const auto& e) { return e.second >= total; });
    if (last != first && std::prev(last) != first) --last;
    PrometheusFigures f;
    f.samples = static_cast<int>(std::distance(first, s.events.end()));
    f.seconds = last->first - first->first;
    const double events = last->second - first->second;
    auto delta = [&](const std::map<double, double>& m) {
      auto a = m.find(first->first), b = m.find(last->first);
      return a == m.end() || b == m.end() ? 0.0 : b->second - a->second;
    };
    if (events > 0) {
      f.cpe_s = delta(s.cpu_system) * s.clock_hz / events;
      f.cpe_p = (delta(s.cpu_user) + delta(s.cpu_system)) * s.clock_hz / events;
    }
    if (f.seconds > 0)
      f.gbps = std::max(delta(s.bytes_in), delta(s.bytes_out)) * 8 / f.seconds / 1e9;
    (*out)[process] = f;
  }
  return {};
}

}  // namespace sluice
