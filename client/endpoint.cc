// Where an application's end is (Connect), what its summary says, and the
// small values every call speaks (include/sluice/types.h).
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file.h"
#include "client/internal.h"
#include "runtime/app_endpoint.h"

namespace sluice {

const char* code_name(Code c) {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kBackPressured: return "back pressured";
    case Code::kClosed: return "closed";
    case Code::kError: return "error";
  }
  return "?";
}

static_assert(int(Type::kI32) == int(FieldType::kI32) && int(Type::kI64) == int(FieldType::kI64) &&
              int(Type::kU32) == int(FieldType::kU32) && int(Type::kU64) == int(FieldType::kU64) &&
              int(Type::kF64) == int(FieldType::kF64) && int(Type::kTimestamp) == int(FieldType::kTimestamp) &&
              int(Type::kBytes) == int(FieldType::kBytes),
              "the public Type spells graph/schema.h's FieldType");

const char* type_name(Type t) { return field_type_name(static_cast<FieldType>(t)); }

std::string Layout::describe() const {
  std::string s = name_ + "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) s += ',';
    s += fields_[i].name + ':' + type_name(fields_[i].type);
    if (fields_[i].type == Type::kBytes) s += fmt::format("[{}]", fields_[i].width);
  }
  return s + fmt::format(";tuple_bytes={}}}", tuple_bytes_);
}

namespace client {
namespace fs = std::filesystem;

Layout layout_of(const Schema& s) {
  std::vector<Field> fields;
  for (size_t i = 0; i < s.fields().size(); ++i) {
    const FieldSpec& f = s.fields()[i];
    const uint32_t w = f.type == FieldType::kBytes ? f.width : field_type_width(f.type);
    fields.push_back({f.name, static_cast<Type>(f.type), s.offsets()[i], w});
  }
  return Layout(s.name(), std::move(fields), s.tuple_bytes());
}

Result error(Status st) { return {Code::kError, st.message()}; }

namespace {

// A standalone end (Connect::address): the end and its one peer, as a
// standalone sluice-node sees its own links (link 0, no receiver named).
std::string standalone_yaml(const Connect& c, Role role) {
  const auto colon = c.address.rfind(':');
  const std::string host = c.address.substr(0, colon), port = c.address.substr(colon + 1);
  std::string y;
  if (!c.fields.empty()) {
    y += "schema: app\nschemas:\n  app:\n    fields:\n";
    for (const Field& f : c.fields) {
      if (f.name == "seq") continue;
      y += fmt::format("      - {{name: '{}', type: {}{}}}\n", f.name, type_name(f.type),
                       f.type == Type::kBytes ? fmt::format(", width: {}", f.width) : "");
    }
    if (c.tuple_bytes) y += fmt::format("    tuple_bytes: {}\n", c.tuple_bytes);
  }
  if (!c.token.empty()) y += fmt::format("token: '{}'\n", c.token);
  y += "processes:\n";
  if (role == Role::kPublisher)
    y += fmt::format("  - {{name: publisher, role: publisher}}\n"
                     "  - {{name: downstream, role: sink, host: '{}', port: {}}}\n", host, port);
  else
    y += fmt::format("  - {{name: upstream, role: loadgen}}\n"
                     "  - {{name: subscriber, role: subscriber, host: '{}', port: {}}}\n", host, port);
  return y;
}

}  // namespace

Status open_endpoint(const Connect& c, Role role, Endpoint* out) {
  Endpoint& e = *out;
  const int given = !c.run_dir.empty() + !c.deployment.empty() + !c.address.empty();
  if (given != 1)
    return Status::Error("Connect: give one of run_dir (and process), deployment (and process) or address");
  std::string process = c.process;
  Status st;
  if (!c.run_dir.empty()) {
    if (process.empty()) return Status::Error("Connect: run_dir needs the process's name");
    AppEndpoint ae;
    if (st = read_app_endpoint(app_endpoint_path(c.run_dir, process), &ae); !st) return st;
    if (st = load_deployment(ae.deployment, c.set, &e.d); !st) return st;
    e.d.run_id = ae.run_id;
    e.summary = c.summary.empty() ? ae.summary : c.summary;
    e.attach = ae.attach;
  } else if (!c.deployment.empty()) {
    if (process.empty()) return Status::Error("Connect: deployment needs the process's name");
    if (st = load_deployment(c.deployment, c.set, &e.d); !st) return st;
    e.summary = c.summary;
  } else {
    const auto colon = c.address.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == c.address.size())
      return Status::Error(fmt::format("Connect: address '{}' is not HOST:PORT", c.address));
    if (st = parse_deployment(standalone_yaml(c, role), fmt::format("(address {})", c.address), c.set, &e.d);
        !st)
      return st;
    e.d.standalone = true;
    process = role_name(role);
    e.summary = c.summary;
  }
  const int index = e.d.process_index(process);
  if (index < 0) return Status::Error(fmt::format("no process '{}' in {}", process, e.d.file));
  e.index = static_cast<size_t>(index);
  const ProcessConfig& pc = e.d.processes[e.index];
  if (pc.role != role)
    return Status::Error(fmt::format("process '{}' in {} is a {}, not a {}", process, e.d.file,
                                     role_name(pc.role), role_name(role)));
  if (c.instance >= e.d.instances)
    return Status::Error(fmt::format("Connect: instance {}, but {} has instances: {}", c.instance, e.d.file,
                                     e.d.instances));
  e.instance = c.instance;
  e.schema = role == Role::kPublisher ? pc.out_schema : pc.in_schema;
  // The layout the application declared, if it did: refused where it is
  // not the graph's. A publisher's Hello carries it, so its receiver
  // refuses it naming both schemas; a subscriber's upstream would be
  // refused at the subscriber's own listener, out of the application's
  // sight, so it is refused here.
  if (!c.fields.empty() && c.address.empty()) {
    std::vector<FieldSpec> specs;
    for (const Field& f : c.fields)
      if (f.name != "seq")
        specs.push_back({f.name, static_cast<FieldType>(f.type), f.type == Type::kBytes ? f.width : 0});
    Schema mine;
    if (st = Schema::make("app", std::move(specs), c.tuple_bytes, &mine); !st) return st;
    if (!mine.same_layout(e.schema)) {
      if (role == Role::kSubscriber) {
        const auto ins = e.d.inputs_of(e.index);
        return Status::Error(fmt::format(
            "schema mismatch: the application reads {}, but '{}' sends {} to '{}'", mine.describe(),
            ins.empty() ? "?" : e.d.processes[e.d.links[ins[0]].from].name, e.schema.describe(), process));
      }
      e.d.processes[e.index].out_schema = mine;
      e.schema = mine;
    }
  }
  return {};
}

void write_attach(const Endpoint& e) {
  if (e.attach.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(e.attach).parent_path(), ec);
  const pid_t pid = getpid();
  uint64_t ticks = 0;
  if (std::ifstream in(fmt::format("/proc/{}/stat", pid)); in) {
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    std::istringstream rest(close == std::string::npos ? "" : line.substr(close + 1));
    std::string field;
    for (int f = 3; rest >> field; ++f)
      if (f == 22) ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  (void)write_atomically(e.attach, fmt::format("{} {}\n", pid, ticks));
}

void summarize(const Endpoint& e, const Instance& in, const Measure& m, ProcessSummary* out) {
  ProcessSummary& s = *out;
  const ProcessConfig& pc = e.d.processes[e.index];
  const double t1 = now_s();
  const CpuTimes cpu1 = CpuTimes::process();
  s.name = pc.name;
  s.role = role_name(pc.role);
  s.instances = 1;
  s.cores = e.d.cores_of(e.index);
  s.clock_ghz = e.d.clock_ghz;
  s.peak_watts = e.d.peak_watts;
  LiveInstance li;
  in.live(&li);
  in.report(s);
  if (pc.role == Role::kSubscriber) {
    s.events_in = li.in.events;
    s.tuples_in = li.in.tuples;
    s.bytes_in = li.in.bytes;
  } else {
    s.events_out = li.out.events;
    s.tuples_out = li.out.tuples;
    s.bytes_out = li.out.bytes;
  }
  if (m.started.load()) {
    s.wall_s = t1 - m.t0;
    const CpuTimes c = cpu1 - m.cpu0;
    s.user_s = c.user_s;
    s.sys_s = c.sys_s;
  }
  s.rss_max_bytes = rss_max_bytes();
  s.compute();
}

Status write_summary(const Endpoint& e, const ProcessSummary& s) {
  if (e.summary.empty()) return {};
  return write_atomically(e.summary, s.to_json() + "\n");
}

bool wait_fd(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
}

int ms_until(uint64_t deadline_ns) {
  const uint64_t now = mono_ns();
  return now >= deadline_ns ? 0 : static_cast<int>((deadline_ns - now + 999999) / 1000000);
}

}  // namespace client
}  // namespace sluice
