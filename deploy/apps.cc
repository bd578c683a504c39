#include "deploy/apps.h"

#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "base/file.h"
#include "runtime/app_endpoint.h"

namespace sluice {

namespace fs = std::filesystem;

const Deployment& app_link_tokens(const Deployment& d, Deployment* storage) {
  bool any = false;
  for (const auto& l : d.links)
    any = any || ((is_app(d.processes[l.from].role) || is_app(d.processes[l.to].role)) && l.options.token.empty());
  if (!any) return d;
  *storage = d;
  std::random_device rd;
  const std::string token = fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
  for (auto& l : storage->links)
    if ((is_app(d.processes[l.from].role) || is_app(d.processes[l.to].role)) && l.options.token.empty())
      l.options.token = token;
  return *storage;
}

AppWatch::AppWatch(const Deployment& d, const std::string& run_dir, const std::string& resolved)
    : d_(d), run_dir_(run_dir), resolved_(resolved) {
  for (size_t i = 0; i < d.processes.size(); ++i)
    if (is_app(d.processes[i].role))
      apps_.push_back({i, d.processes[i].name, app_attach_path(run_dir, d.processes[i].name),
                       (fs::path(run_dir) / (d.processes[i].name + ".json")).string()});
}

Status AppWatch::write_files() const {
  std::error_code ec;
  if (apps_.empty()) return {};
  fs::create_directories(fs::path(run_dir_) / "apps", ec);
  for (const App& a : apps_) {
    fs::remove(a.attach, ec);
    const AppEndpoint e = app_endpoint_of(d_, a.index, run_dir_, resolved_);
    if (Status st = write_atomically(app_endpoint_path(run_dir_, a.name), app_endpoint_json(e)); !st)
      return st;
  }
  return {};
}

std::string app_connect_text(const Deployment& d, const std::string& run_dir) {
  std::string out;
  for (const auto& p : d.processes) {
    if (!is_app(p.role)) continue;
    AppEndpoint e;
    if (Status st = read_app_endpoint(app_endpoint_path(run_dir, p.name), &e); !st) {
      out += fmt::format("  {}: {}\n", p.name, st.message());
      continue;
    }
    out += app_endpoint_text(e, run_dir);
  }
  if (out.empty()) return out;
  return fmt::format("sluice-deploy: waiting up to {} s (app_wait_s) for the applications' ends to connect:\n{}",
                     d.app_wait_s, out);
}

std::string AppWatch::connect_text() const { return app_connect_text(d_, run_dir_); }

size_t AppWatch::waiting() const {
  size_t n = 0;
  for (const App& a : apps_) n += !a.ended;
  return n;
}

std::string AppWatch::waiting_names() const {
  std::string out;
  for (const App& a : apps_)
    if (!a.ended) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", a.name,
                                     a.attached ? "application" : "awaited");
  return out;
}

namespace {
// The pid and start time the library wrote; false while there is none.
bool read_attach(const std::string& path, pid_t* pid, uint64_t* ticks) {
  std::ifstream in(path);
  long long p = 0;
  unsigned long long t = 0;
  if (!(in >> p >> t) || p <= 0) return false;
  *pid = static_cast<pid_t>(p);
  *ticks = t;
  return true;
}
}  // namespace

std::string AppWatch::poll(RunReport* r, double since_s) {
  for (App& a : apps_) {
    if (a.ended) continue;
    ProcessOutcome& p = r->processes[a.index];
    if (!a.attached) {
      if (read_attach(a.attach, &a.pid, &a.ticks)) {
        a.attached = true;
        p.pid = a.pid;
        p.start_ticks = a.ticks;
        p.running = true;
      } else if (since_s > d_.app_wait_s) {
        p.error = fmt::format("did not connect within {} s (app_wait_s)", d_.app_wait_s);
        return fmt::format("application '{}' (role {}) did not connect within {} s (app_wait_s); an "
                           "application connects as it with Connect{{.run_dir = \"{}\", .process = \"{}\"}} "
                           "(docs/API.md)",
                           a.name, role_name(d_.processes[a.index].role), d_.app_wait_s, run_dir_, a.name);
      } else {
        continue;
      }
    }
    // Its summary says it closed its end; without one, a process that is
    // gone died with the end open.
    std::error_code ec;
    const bool alive = ::kill(a.pid, 0) == 0 && (a.ticks == 0 || process_start_ticks(a.pid) == a.ticks);
    if (fs::exists(a.summary, ec) || !alive) {
      a.ended = true;
      p.running = false;
      if (fs::exists(a.summary, ec)) {
        p.exit_code = 0;
      } else {
        p.error = fmt::format("the application (pid {}) ended without closing its end (no summary {})", a.pid,
                              a.summary);
        return fmt::format("application '{}' (role {}, pid {}) {}", a.name, role_name(d_.processes[a.index].role),
                           a.pid, p.error);
      }
    }
  }
  return "";
}

}  // namespace sluice
