#include "deploy/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "deploy/prometheus.h"

namespace sluice {

std::map<std::string, double> parse_metrics_text(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    char* end = nullptr;
    const double v = std::strtod(line.c_str() + sp + 1, &end);
    if (end == line.c_str() + sp + 1) continue;
    out[line.substr(0, sp)] = v;
  }
  return out;
}

namespace {

// "http://HOST:PORT/metrics" from a process's log, "" until it is there.
std::string endpoint_in_log(const std::string& path) {
  std::ifstream f(path);
  const std::string key = "metrics at http://";
  for (std::string line; std::getline(f, line);) {
    const size_t at = line.find(key);
    if (at == std::string::npos) continue;
    const size_t from = at + key.size();
    const size_t slash = line.find('/', from);
    return line.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
  }
  return "";
}

double get(const std::map<std::string, double>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

LiveTable::LiveTable(std::vector<Process> processes)
    : procs_(std::move(processes)), rows_(procs_.size()) {}

void LiveTable::feed(size_t i, double now, const std::string& text) {
  Row& r = rows_[i];
  std::map<std::string, double> m = parse_metrics_text(text);
  if (r.have && now > r.t) {
    const double dt = now - r.t;
    auto d = [&](const char* k) { return std::max(0.0, get(m, k) - get(r.last, k)); };
    const double ev = d(R"(sluice_events_total{direction="in"})") + d(R"(sluice_events_total{direction="out"})");
    const double tu = std::max(d(R"(sluice_tuples_total{direction="in"})"), d(R"(sluice_tuples_total{direction="out"})"));
    const double by = std::max(d(R"(sluice_bytes_total{direction="in"})"), d(R"(sluice_bytes_total{direction="out"})"));
    const double user = d(R"(sluice_cpu_seconds_total{mode="user"})");
    const double sys = d(R"(sluice_cpu_seconds_total{mode="system"})");
    const double f = get(m, "sluice_clock_hertz"), cores = get(m, "sluice_cores");
    r.tuples_s = tu / dt;
    r.gbps = by * 8 / dt / 1e9;
    r.cpe_u = ev > 0 ? user * f / ev : 0;
    r.cpe_s = ev > 0 ? sys * f / ev : 0;
    r.cpe_p = r.cpe_u + r.cpe_s;
    r.cpe_i = ev > 0 ? std::max(0.0, cores * dt - user - sys) * f / ev : 0;
    r.rates = true;
  }
  r.last = std::move(m);
  r.t = now;
  r.have = true;
}

void LiveTable::update(double now, int timeout_ms) {
  for (size_t i = 0; i < procs_.size(); ++i) {
    Row& r = rows_[i];
    if (r.hostport.empty()) r.hostport = endpoint_in_log(procs_[i].log_path);
    if (r.hostport.empty()) continue;
    std::string body;
    if (http_get(r.hostport, "/metrics", timeout_ms, &body)) feed(i, now, body);
    else r.rates = false;  // gone (ended) or not answering: no figures now
  }
}

std::string LiveTable::render(const std::string& title) const {
  size_t w = 8;
  for (const auto& p : procs_) w = std::max(w, p.name.size());
  std::string out = title + "\n";
  out += fmt::format("{:<{}} {:<8} {:>12} {:>7} {:>9} {:>9} {:>9} {:>9}\n", "process", w, "role",
                     "tuples/s", "Gb/s", "CPE_p", "CPE_u", "CPE_s", "CPE_i");
  for (size_t i = 0; i < procs_.size(); ++i) {
    const Row& r = rows_[i];
    if (!r.rates) {
      out += fmt::format("{:<{}} {:<8} {:>12} {:>7} {:>9} {:>9} {:>9} {:>9}\n", procs_[i].name, w,
                         procs_[i].role, "-", "-", "-", "-", "-", "-");
      continue;
    }
    out += fmt::format("{:<{}} {:<8} {:>12.0f} {:>7.2f} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f}\n",
                       procs_[i].name, w, procs_[i].role, r.tuples_s, r.gbps, r.cpe_p, r.cpe_u,
                       r.cpe_s, r.cpe_i);
  }
  return out;
}

void LiveTable::draw(std::FILE* out, const std::string& title) {
  const std::string text = render(title);
  std::string s;
  if (drawn_lines_) s += fmt::format("\x1b[{}A", drawn_lines_);  // back to the table's first line
  size_t lines = 0;
  for (size_t from = 0; from < text.size();) {
    const size_t nl = text.find('\n', from);
    s += "\r\x1b[2K" + text.substr(from, nl - from) + "\n";
    from = nl + 1;
    ++lines;
  }
  drawn_lines_ = lines;
  std::fputs(s.c_str(), out);
  std::fflush(out);
}

}  // namespace sluice
