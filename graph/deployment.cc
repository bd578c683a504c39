// The Deployment's own queries, and the values its keys hold.
//
// What the rest of sluice asks of a parsed deployment: the links into and
// out of a process, the port a link's receiver listens on for an instance,
// everything both ends of a link need (link_options), the streams a process
// carries, the order to start processes in (receivers first), the cores a
// process gets. Also the names of the enums of graph/config.h, the accessors
// of an operator's parameters, and the parsers of values the keys take
// (rates like 10gbit, IPv4 subnets, CPU lists like 0-3,6), which the
// programs use too (the launchers, tc, pinning).
//
// None of this reads YAML: parsing is in config_parse.cc and its neighbours.
#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "graph/config.h"
#include "graph/config_stages.h"

namespace sluice {

const char* role_name(Role r) {
  switch (r) {
    case Role::kLoadgen: return "loadgen";
    case Role::kNode: return "node";
    case Role::kSink: return "sink";
    case Role::kPublisher: return "publisher";
    case Role::kSubscriber: return "subscriber";
  }
  return "?";
}

int Deployment::process_index(const std::string& name) const {
  for (size_t i = 0; i < processes.size(); ++i)
    if (processes[i].name == name) return static_cast<int>(i);
  return -1;
}

const char* split_name(Split s) {
  return s == Split::kCopy ? "copy" : s == Split::kKey ? "key" : "stream";
}

std::vector<size_t> Deployment::inputs_of(size_t i) const {
  std::vector<size_t> v;
  for (size_t l = 0; l < links.size(); ++l)
    if (links[l].to == i) v.push_back(l);
  return v;
}

std::vector<size_t> Deployment::outputs_of(size_t i) const {
  std::vector<size_t> v;
  for (size_t l = 0; l < links.size(); ++l)
    if (links[l].from == i) v.push_back(l);
  return v;
}

std::string Deployment::threads_of(size_t i) const {
  const std::string& t = processes[i].threads.empty() ? threads : processes[i].threads;
  if (t != "auto") return t;
  // An application's thread is a stage of its own already (it fills the
  // events a publisher sends, it handles those a subscriber receives): one
  // thread beside it moves them over the links.
  if (is_app(processes[i].role)) return "shared";
  std::vector<size_t> ls = inputs_of(i);
  for (size_t l : outputs_of(i)) ls.push_back(l);
  bool shm = !ls.empty();
  for (size_t l : ls) {
    const LinkOptions o = link_options(l, 0);
    const std::string& u = o.msg.ucx_tls;
    shm = shm && ((o.transport == "ucx" && (u == "sm" || u == "posix" || u == "sysv")) ||
                  (o.transport == "fabric" && o.msg.fabric_provider == "shm"));
  }
  return shm ? "shared" : "adaptive";
}

// link_port before it is narrowed: validation refuses a result beyond 65535.
uint32_t cfg::wide_link_port(const Deployment& d, size_t l, uint32_t instance) {
  if (d.links[l].port) return uint32_t{d.links[l].port} + instance;
  const size_t to = d.links[l].to;
  const uint32_t first = d.processes[to].port ? d.processes[to].port : d.base_port + 100u * to;
  const auto ins = d.inputs_of(to);
  const size_t j = std::find(ins.begin(), ins.end(), l) - ins.begin();
  return first + static_cast<uint32_t>(j) * d.instances + instance;
}

uint16_t Deployment::link_port(size_t l, uint32_t instance) const {
  return static_cast<uint16_t>(cfg::wide_link_port(*this, l, instance));
}

// "link 1 (node-a -> sink)", for errors; `more` goes inside the parentheses.
std::string cfg::link_name(const Deployment& d, size_t l, const std::string& more) {
  return fmt::format("link {} ({} -> {}{})", l, d.processes[d.links[l].from].name,
                     d.processes[d.links[l].to].name, more);
}

// One LinkOptions serves both ends of link l: the sender connects to the
// receiver's host and the receiver binds its listen address; errors on either
// end read "link <from> -> <to>".
LinkOptions Deployment::link_options(size_t l, uint32_t instance) const {
  LinkOptions o = links[l].options;
  const ProcessConfig& to = processes[links[l].to];
  o.host = to.host;
  o.listen = to.listen;
  o.port = link_port(l, instance);
  o.from = processes[links[l].from].name;
  o.to = to.name;
  o.link_id = standalone ? 0 : static_cast<uint32_t>(l);
  o.name_receiver = !standalone;
  o.instance = instance;
  // The stream on the link is its sender's output: the default schema goes
  // by the top-level `schema` name (as it always has); any other by its
  // whole description, which the handshake compares.
  const Schema& sch = processes[links[l].from].out_schema;
  if (sch.fields().empty() || sch.name() == "default") {
    o.tuple_bytes = sch.fields().empty() ? tuple_bytes : sch.tuple_bytes();
    o.schema = link.schema;
  } else {
    o.tuple_bytes = sch.tuple_bytes();
    o.schema = sch.describe();
  }
  o.wait = wait;
  // A subscriber is the application's, started when the application is:
  // its upstream keeps trying to connect while run waits for it.
  if (to.role == Role::kSubscriber && !standalone)
    o.connect_timeout_ms = std::max<uint32_t>(o.connect_timeout_ms, static_cast<uint32_t>(app_wait_s * 1000));
  // ucx_tls: auto: shared memory between two processes of one host (the same
  // address), tcp between hosts. A standalone program knows only its own
  // address, not its peer's: tcp.
  resolve_ucx_tls(&o.msg, !standalone && processes[links[l].from].host == to.host);
  return o;
}

const SchemaConfig* Deployment::find_schema(const std::string& name) const {
  for (const auto& sc : schemas)
    if (sc.schema.name() == name) return &sc;
  return nullptr;
}

const SchemaConfig* Deployment::loadgen_schema(size_t i) const {
  const std::string& n = processes[i].schema.empty() ? link.schema : processes[i].schema;
  return find_schema(n);
}

const char* field_gen_name(FieldGen::Kind k) {
  switch (k) {
    case FieldGen::Kind::kSequence: return "sequence";
    case FieldGen::Kind::kUniform: return "uniform";
    case FieldGen::Kind::kZipf: return "zipf";
    case FieldGen::Kind::kConstant: return "constant";
    case FieldGen::Kind::kRandom: return "random";
  }
  return "?";
}

const std::string& OperatorConfig::get(std::string_view key) const {
  static const std::string none;
  for (const auto& [k, v] : params)
    if (k == key) return v;
  return none;
}
void OperatorConfig::set(const std::string& key, const std::string& value) {
  for (auto& [k, v] : params)
    if (k == key) {
      v = value;
      return;
    }
  params.emplace_back(key, value);
}
uint64_t OperatorConfig::u64(std::string_view key) const { return std::strtoull(get(key).c_str(), nullptr, 0); }
int64_t OperatorConfig::i64(std::string_view key) const { return std::strtoll(get(key).c_str(), nullptr, 0); }
double OperatorConfig::f64(std::string_view key) const { return std::strtod(get(key).c_str(), nullptr); }
std::vector<std::string> OperatorConfig::list(std::string_view key) const {
  std::vector<std::string> out;
  std::string cur;
  for (char c : get(key)) {
    if (c == ',' || c == '[' || c == ']' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}
OperatorConfig OperatorConfig::filter(const std::string& field, const std::string& op, int64_t value) {
  OperatorConfig c;
  c.kind = "filter";
  c.params = {{"field", field}, {"op", op}, {"value", std::to_string(value)}};
  return c;
}

uint32_t Deployment::first_stream(size_t i) const {
  uint32_t f = 0;
  for (size_t j = 0; j < i && j < processes.size(); ++j)
    if (is_source(processes[j].role)) f += streams;
  return f;
}

// Load generators upstream of i, each counted once, times their streams.
uint32_t Deployment::streams_into(size_t i) const {
  std::vector<bool> seen(processes.size(), false);
  std::vector<size_t> todo = {i};
  uint32_t n = 0;
  while (!todo.empty()) {
    const size_t p = todo.back();
    todo.pop_back();
    for (size_t l : inputs_of(p)) {
      const size_t f = links[l].from;
      if (seen[f]) continue;
      seen[f] = true;
      if (is_source(processes[f].role)) n += streams;
      todo.push_back(f);
    }
  }
  return n;
}

// Receivers before their senders: a process comes once every process it
// links to has come (the graph has no cycle once validated).
std::vector<size_t> Deployment::start_order() const {
  std::vector<size_t> order;
  std::vector<bool> placed(processes.size(), false);
  while (order.size() < processes.size()) {
    bool progress = false;
    for (size_t i = processes.size(); i-- > 0;) {
      if (placed[i]) continue;
      bool ready = true;
      for (size_t l : outputs_of(i)) ready = ready && placed[links[l].to];
      if (!ready) continue;
      placed[i] = true;
      order.push_back(i);
      progress = true;
    }
    if (!progress)  // a cycle (refused by validation): the rest in reverse file order
      for (size_t i = processes.size(); i-- > 0;)
        if (!placed[i]) {
          placed[i] = true;
          order.push_back(i);
        }
  }
  return order;
}

double Deployment::cores_of(size_t i) const {
  if (processes[i].cores > 0) return processes[i].cores;
  const HostConfig* h = host_of(i);
  unsigned hw = h && !h->cpus.empty() ? static_cast<unsigned>(h->cpus.size())
                                      : std::thread::hardware_concurrency();
  if (hw == 0) hw = 1;
  // Processes per host: by the host they name, else by address.
  size_t same_host = 0;
  for (const auto& p : processes)
    if (h ? p.host_name == h->name : p.host == processes[i].host) ++same_host;
  return std::max(0.25, double(hw) / double(std::max<size_t>(same_host, 1)));
}

const HostConfig* Deployment::host_of(size_t i) const {
  for (const auto& h : hosts)
    if (h.name == processes[i].host_name) return &h;
  return nullptr;
}

bool parse_rate(const std::string& text, uint64_t* bps) {
  std::string t;
  for (char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  char* end = nullptr;
  const double v = t.empty() ? -1 : std::strtod(t.c_str(), &end);
  if (t.empty() || end == t.c_str() || !std::isfinite(v) || v < 0) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "bit") scale = 1;
  else if (unit == "kbit") scale = 1e3;
  else if (unit == "mbit") scale = 1e6;
  else if (unit == "gbit") scale = 1e9;
  else if (unit == "tbit") scale = 1e12;
  else return false;
  const double r = v * scale;
  if (r > 1e15 || (r > 0 && r < 8000)) return false;  // beyond tc's range: 8 kbit .. 1 Pbit
  *bps = static_cast<uint64_t>(std::llround(r));
  return true;
}

std::string rate_name(uint64_t bps) {
  if (bps == 0) return "0";
  for (auto [scale, unit] : {std::pair<uint64_t, const char*>{1000000000000, "tbit"},
                             {1000000000, "gbit"}, {1000000, "mbit"}, {1000, "kbit"}})
    if (bps % scale == 0) return fmt::format("{}{}", bps / scale, unit);
  return fmt::format("{}bit", bps);
}

bool parse_subnet(const std::string& text, uint32_t* network, unsigned* prefix) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  uint32_t a = 0;
  if (!parse_ipv4(text.substr(0, slash), &a)) return false;
  unsigned n = 0;
  const std::string p = text.substr(slash + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || n < 1 || n > 30) return false;
  const uint32_t mask = ~uint32_t{0} << (32 - n);
  if (network) *network = a & mask;
  if (prefix) *prefix = n;
  return true;
}

bool parse_ipv4(const std::string& text, uint32_t* addr) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return false;
  *addr = ntohl(a.s_addr);
  return true;
}

bool parse_cpu_list(const std::string& text, std::vector<unsigned>* cpus) {
  constexpr unsigned kMaxCpu = 1024;  // CPU_SETSIZE
  std::vector<unsigned> out;
  size_t b = 0;
  while (b <= text.size()) {
    size_t comma = text.find(',', b);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(b, comma - b);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    unsigned lo = 0, hi = 0;
    const size_t dash = part.find('-');
    auto num = [](const std::string& s, unsigned* v) {
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
      return !s.empty() && ec == std::errc() && p == s.data() + s.size();
    };
    if (dash == std::string::npos) {
      if (!num(part, &lo)) return false;
      hi = lo;
    } else if (!num(part.substr(0, dash), &lo) || !num(part.substr(dash + 1), &hi) || hi < lo) {
      return false;
    }
    if (hi >= kMaxCpu) return false;
    for (unsigned c = lo; c <= hi; ++c) out.push_back(c);
    b = comma + 1;
  }
  std::sort(out.begin(), out.end());
  if (out.empty() || std::adjacent_find(out.begin(), out.end()) != out.end()) return false;
  *cpus = std::move(out);
  return true;
}

std::string cpu_list_name(const std::vector<unsigned>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : ",",
                       j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace sluice
