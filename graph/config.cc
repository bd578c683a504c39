// The deployment parser. How a file becomes a Deployment:
//   1. YAML::Load the text (a syntax error names file:line; an unclosed `[`
//      or `{` names the line that opened it).
//   2. Apply each `--set key=value` to the YAML tree, so an override is checked
//      by exactly the same code as the file; the nodes it put there remember
//      the override, and an error on them names "--set key=value".
//   3. Read the top-level keys through one table (kKeys): `preset` first (it
//      resets the link choices), then `host`, then every other key (explicit
//      keys beat the preset), then `processes`.
//   4. Check what only makes sense across keys (an event fits a slot, the
//      chain runs loadgen -> nodes -> sink, ...).
// dump_deployment() writes the same table back, so dumped text parses to the
// identical Deployment.
#include "graph/config.h"

#include <arpa/inet.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "graph/operator.h"
#include "transport/event.h"
#include "transport/handshake.h"

namespace sluice {

const char* role_name(Role r) {
  switch (r) {
    case Role::kLoadgen: return "loadgen";
    case Role::kNode: return "node";
    case Role::kSink: return "sink";
  }
  return "?";
}

Status apply_preset(const std::string& preset, LinkOptions* link) {
  if (preset == "original") {
    link->transport = "tcp";
    link->tcp.encoding = Encoding::kCapnp;
    link->tcp.async_send = true;
    link->tcp.rx_select = true;
    link->tcp.read_bytes = 4096;
    link->tcp.poll_timeout_us = 1000;
  } else if (preset == "tcp-opt") {
    link->transport = "tcp";
    link->tcp.encoding = Encoding::kSg;
    link->tcp.async_send = false;
    link->tcp.rx_select = false;
    link->tcp.read_bytes = 65536;
  } else if (preset == "fabric-opt" || preset == "ucx-opt") {
    link->transport = preset == "fabric-opt" ? "fabric" : "ucx";
    link->tcp.encoding = Encoding::kSg;
    link->tcp.async_send = false;
    link->tcp.rx_select = false;
  } else {
    return Status::Error(fmt::format(
        "unknown preset '{}' (known: original, tcp-opt, fabric-opt, ucx-opt)", preset));
  }
  return {};
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

// link_port before it is narrowed: validation refuses a result beyond 65535.
static uint32_t wide_link_port(const Deployment& d, size_t l, uint32_t instance) {
  if (d.links[l].port) return uint32_t{d.links[l].port} + instance;
  const size_t to = d.links[l].to;
  const uint32_t first = d.processes[to].port ? d.processes[to].port : d.base_port + 100u * to;
  const auto ins = d.inputs_of(to);
  const size_t j = std::find(ins.begin(), ins.end(), l) - ins.begin();
  return first + static_cast<uint32_t>(j) * d.instances + instance;
}

uint16_t Deployment::link_port(size_t l, uint32_t instance) const {
  return static_cast<uint16_t>(wide_link_port(*this, l, instance));
}

// "link 1 (node-a -> sink)", for errors; `more` goes inside the parentheses.
static std::string link_name(const Deployment& d, size_t l, const std::string& more = "") {
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
    if (processes[j].role == Role::kLoadgen) f += streams;
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
      if (processes[f].role == Role::kLoadgen) n += streams;
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

namespace {

// ---------------------------------------------------------------- helpers

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(std::string_view key, const std::vector<std::string>& known) {
  size_t best = 3;
  std::string pick;
  for (const auto& k : known) {
    size_t d = edit_distance(key, k);
    if (d < best) best = d, pick = k;
  }
  return pick.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", pick);
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

const char* node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    default: return "a scalar";
  }
}

std::string fmt_double(double v) { return fmt::format("{}", v); }

const std::vector<std::string> kEncodings = {"capnp", "copy", "sg"};
const std::vector<std::string> kTransports = {"tcp", "fabric", "ucx"};
const std::vector<std::string> kCongestion = {"default", "reno", "cubic", "bbr"};
const std::vector<std::string> kWaits = {"block", "spin", "hybrid"};
const std::vector<std::string> kRoles = {"loadgen", "node", "sink"};
const std::vector<std::string> kProcessKeys = {"name", "role", "host", "listen", "port", "cores", "split", "split_key", "pin_stages", "operators", "schema", "results"};
const std::vector<std::string> kSchemaKeys = {"fields", "tuple_bytes"};
const std::vector<std::string> kFieldKeys = {"name", "type", "width", "gen"};
const std::vector<std::string> kGenKinds = {"sequence", "uniform", "zipf", "constant", "random"};
const std::vector<std::string> kHostKeys = {"name", "address", "cores", "rate", "ssh_user", "ssh_port"};
const std::vector<std::string> kLaunchers = {"local", "netns", "ssh"};
const std::vector<std::string>& kOperatorKinds = *new std::vector<std::string>(operator_kinds());


// ---------------------------------------------------------------- Reader

// Reads typed values out of YAML nodes and words errors: "FILE:LINE: key
// 'K': what" for nodes from the file, "--set K=V: what" for override nodes.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  // Remembers that `n` (and everything under it) came from `--set text`.
  void mark_override(const YAML::Node& n, const std::string& text, bool root = true) {
    overrides_.push_back({n, text, root});
    if (n.IsMap()) {
      for (auto kv : n) {
        mark_override(kv.first, text, false);
        mark_override(kv.second, text, false);
      }
    } else if (n.IsSequence()) {
      for (auto e : n) mark_override(e, text, false);
    }
  }

  // Links written out from the chain of processes: errors on them name the
  // line of `processes`.
  void mark_chain(const YAML::Node& links, const YAML::Node& processes) {
    chain_links_ = links;
    chain_at_ = file_line(processes);
  }
  bool is_chain(const YAML::Node& n) const {
    try {
      return chain_links_.IsDefined() && !chain_links_.IsNull() && chain_links_.is(n);
    } catch (const YAML::Exception&) {
      return false;
    }
  }
  const std::string& chain_at() const { return chain_at_; }

  // "file:line" or "--set k=v".
  std::string where(const YAML::Node& n) const {
    if (const Origin* o = origin(n)) return "--set " + o->text;
    return file_line(n);
  }

  // Where key `k` with value `v` was given: its override, else the key's
  // line (a block list's value starts on the next one).
  std::string key_at(const YAML::Node& k, const YAML::Node& v) const {
    if (const Origin* o = origin(v)) return "--set " + o->text;
    return file_line(k);
  }

  std::string file_line(const YAML::Node& n) const {
    int line = -1;
    try {
      line = n.Mark().line;
    } catch (const YAML::Exception&) {
    }
    return line >= 0 ? fmt::format("{}:{}", name_, line + 1) : name_;
  }

  Status error(const YAML::Node& at, std::string_view key, std::string_view msg) const {
    const Origin* o = origin(at);
    if (o && (o->root || key.empty())) return Status::Error(fmt::format("--set {}: {}", o->text, msg));
    if (key.empty()) return Status::Error(fmt::format("{}: {}", where(at), msg));
    return Status::Error(fmt::format("{}: key '{}': {}", where(at), key, msg));
  }

  Status get_uint(const YAML::Node& n, std::string_view key, uint64_t max, uint64_t* out) const {
    if (!n.IsScalar())
      return error(n, key, fmt::format("expected an unsigned integer, got {}", node_kind(n)));
    const std::string& s = n.Scalar();
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec == std::errc::invalid_argument || p != s.data() + s.size())
      return error(n, key, fmt::format("expected an unsigned integer, got '{}'", s));
    if (ec == std::errc::result_out_of_range || v > max)
      return error(n, key, fmt::format("{} is out of range (at most {})", s, max));
    *out = v;
    return {};
  }

  template <class T>
  Status get(const YAML::Node& n, std::string_view key, T* out) const {
    uint64_t v = 0;
    if (Status st = get_uint(n, key, std::numeric_limits<T>::max(), &v); !st) return st;
    *out = static_cast<T>(v);
    return {};
  }

  // A finite number >= 0 (every double in the schema is a duration, a rate
  // or a count of something).
  Status get_double(const YAML::Node& n, std::string_view key, double* out) const {
    if (!n.IsScalar()) return error(n, key, fmt::format("expected a number, got {}", node_kind(n)));
    const std::string& s = n.Scalar();
    char* end = nullptr;
    double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
      return error(n, key, fmt::format("expected a number, got '{}'", s));
    if (v < 0) return error(n, key, fmt::format("must not be negative, got {}", s));
    *out = v;
    return {};
  }

  // A string; `null` (an empty value) reads as "" when allow_empty.
  Status get_string(const YAML::Node& n, std::string_view key, bool allow_empty,
                    std::string* out) const {
    if (n.IsNull() && allow_empty) {
      out->clear();
      return {};
    }
    if (!n.IsScalar()) return error(n, key, fmt::format("expected a string, got {}", node_kind(n)));
    if (n.Scalar().empty() && !allow_empty) return error(n, key, "must not be empty");
    *out = n.Scalar();
    return {};
  }

  // A link speed: "10gbit", "500mbit", a number of bit/s; 0: no limit.
  Status get_rate(const YAML::Node& n, std::string_view key, uint64_t* bps) const {
    if (!n.IsScalar() || !parse_rate(n.Scalar(), bps))
      return error(n, key,
                   fmt::format("expected a rate like 10gbit, 500mbit or 0 (no limit; units bit, "
                               "kbit, mbit, gbit, tbit, 8kbit at least), got {}",
                               n.IsScalar() ? "'" + n.Scalar() + "'" : node_kind(n)));
    return {};
  }

  Status get_enum(const YAML::Node& n, std::string_view key, const std::vector<std::string>& allowed,
                  std::string* out) const {
    if (!n.IsScalar())
      return error(n, key, fmt::format("expected one of {}, got {}", join(allowed), node_kind(n)));
    if (std::find(allowed.begin(), allowed.end(), n.Scalar()) == allowed.end())
      return error(n, key,
                   fmt::format("invalid value '{}' (allowed: {})", n.Scalar(), join(allowed)));
    *out = n.Scalar();
    return {};
  }

  // Iterates a map's keys: checks each is a known one (with a suggestion) and
  // appears once. `path` prefixes key names in messages ("processes.1").
  Status keys_of(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string>& known,
                 std::vector<std::pair<YAML::Node, YAML::Node>>* out) const {
    std::map<std::string, YAML::Node> seen;
    for (auto kv : map) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      std::string full = path.empty() ? k : path + "." + k;
      if (!kv.first.IsScalar())
        return error(kv.first, "", fmt::format("{}: a key must be a plain name", path));
      if (std::find(known.begin(), known.end(), k) == known.end())
        return error(kv.first, "",
                     fmt::format("unknown key '{}'{}", full, did_you_mean(k, known)));
      if (auto it = seen.find(k); it != seen.end())
        return error(kv.first, "",
                     fmt::format("key '{}' given twice (first at {})", full, where(it->second)));
      seen.emplace(k, kv.first);
      out->push_back({kv.first, kv.second});
    }
    return {};
  }

 private:
  struct Origin {
    YAML::Node node;
    std::string text;
    bool root;
  };
  const Origin* origin(const YAML::Node& n) const {
    try {
      for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it)
        if (it->node.is(n)) return &*it;
    } catch (const YAML::Exception&) {
    }
    return nullptr;
  }

  std::string name_;
  std::vector<Origin> overrides_;
  YAML::Node chain_links_;
  std::string chain_at_;
};

// ---------------------------------------------------------------- the tables

// One link key: read into a LinkOptions (the top level's defaults, or one
// link's), written back. A key with `only` belongs to those carriers
// ("tcp", "fabric", "ucx", "fabric|ucx"); others are every link's.
struct LinkKey {
  std::string name;
  const char* only;
  std::function<Status(const Reader&, const YAML::Node&, const std::string&, LinkOptions*)> read;
  std::function<void(YAML::Emitter&, const LinkOptions&)> write;
};

template <class T>
LinkKey link_uint(const char* name, const char* only, T& (*field)(LinkOptions&)) {
  return {name, only,
          [=](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
            return r.get(n, path, &field(*l));
          },
          [=](YAML::Emitter& e, const LinkOptions& l) {
            e << YAML::Key << name << YAML::Value << uint64_t(field(const_cast<LinkOptions&>(l)));
          }};
}

// An enum: read as one of `allowed`, stored by `set`, written by `get`.
LinkKey link_enum(const char* name, const char* only, const std::vector<std::string>* allowed,
                  std::function<void(LinkOptions*, const std::string&)> set,
                  std::function<std::string(const LinkOptions&)> get) {
  return {name, only,
          [=](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
            std::string v;
            if (Status st = r.get_enum(n, path, *allowed, &v); !st) return st;
            set(l, v);
            return Status();
          },
          [=](YAML::Emitter& e, const LinkOptions& l) { e << YAML::Key << name << YAML::Value << get(l); }};
}

const std::vector<std::string> kSendQueues = {"sync", "async"};
const std::vector<std::string> kRxPolls = {"block", "select"};
const std::vector<std::string> kHandovers = {"descriptor", "copy"};
const std::vector<std::string> kOnOff = {"on", "off"};
const std::vector<std::string> kCongestionIn = {"", "default", "reno", "cubic", "bbr"};
const std::vector<std::string> kSplits = {"stream", "copy", "key"};
// Providers and UCX transports sluice knows how to drive; whether one is
// present on this machine is the carrier's to say at start.
const std::vector<std::string> kFabricProviders = {"tcp", "net", "shm", "verbs", "efa", "psm2", "psm3"};
const std::vector<std::string> kUcxTls = {"tcp", "sm", "posix", "sysv", "cma", "rc", "ud", "dc",
                                          "rc_x", "ud_x", "dc_x", "sm,tcp", "rc,sm", "ud,sm", "all"};
const std::vector<std::string> kSendCompletions = {"async", "sync"};

// Whether a carrier-specific key means something on a link of `transport`.
bool key_applies(const char* only, const std::string& transport) {
  if (!only) return true;
  std::string o = only;
  size_t pos = 0;
  while (pos <= o.size()) {
    size_t bar = o.find('|', pos);
    if (bar == std::string::npos) bar = o.size();
    if (o.compare(pos, bar - pos, transport) == 0) return true;
    pos = bar + 1;
  }
  return false;
}

// Every key a link may set, at the top level (the defaults of every link) or
// in a link of `links:`.
const std::vector<LinkKey>& link_keys() {
  static const std::vector<LinkKey> k = {
      link_enum("transport", nullptr, &kTransports,
                [](LinkOptions* l, const std::string& v) { l->transport = v; },
                [](const LinkOptions& l) { return l.transport; }),
      link_enum("encoding", "tcp", &kEncodings,
                [](LinkOptions* l, const std::string& v) { parse_encoding(v, &l->tcp.encoding); },
                [](const LinkOptions& l) { return std::string(encoding_name(l.tcp.encoding)); }),
      link_enum("send_queue", "tcp", &kSendQueues,
                [](LinkOptions* l, const std::string& v) { l->tcp.async_send = v == "async"; },
                [](const LinkOptions& l) { return std::string(l.tcp.async_send ? "async" : "sync"); }),
      link_enum("rx_poll", "tcp", &kRxPolls,
                [](LinkOptions* l, const std::string& v) { l->tcp.rx_select = v == "select"; },
                [](const LinkOptions& l) { return std::string(l.tcp.rx_select ? "select" : "block"); }),
      link_uint("read_bytes", "tcp", +[](LinkOptions& l) -> uint32_t& { return l.tcp.read_bytes; }),
      link_uint("poll_timeout_us", "tcp",
                +[](LinkOptions& l) -> uint32_t& { return l.tcp.poll_timeout_us; }),
      {"congestion", "tcp",
       [](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
         std::string v;
         if (n.IsNull()) v.clear();
         else if (Status st = r.get_enum(n, path, kCongestionIn, &v); !st) return st;
         l->tcp.congestion = v == "default" ? "" : v;
         return Status();
       },
       [](YAML::Emitter& e, const LinkOptions& l) {
         e << YAML::Key << "congestion" << YAML::Value
           << (l.tcp.congestion.empty() ? std::string("default") : l.tcp.congestion);
       }},
      link_uint("slot_bytes", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.slot_bytes; }),
      link_uint("slots", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.slots; }),
      link_uint("credit_batch", nullptr, +[](LinkOptions& l) -> uint32_t& { return l.credit_batch; }),
      link_uint("connect_timeout_ms", nullptr,
                +[](LinkOptions& l) -> uint32_t& { return l.connect_timeout_ms; }),
      link_enum("fabric_provider", "fabric", &kFabricProviders,
                [](LinkOptions* l, const std::string& v) { l->msg.fabric_provider = v; },
                [](const LinkOptions& l) { return l.msg.fabric_provider; }),
      link_enum("ucx_tls", "ucx", &kUcxTls,
                [](LinkOptions* l, const std::string& v) { l->msg.ucx_tls = v; },
                [](const LinkOptions& l) { return l.msg.ucx_tls; }),
      link_enum("send_completion", "fabric|ucx", &kSendCompletions,
                [](LinkOptions* l, const std::string& v) { l->msg.sync_completion = v == "sync"; },
                [](const LinkOptions& l) { return std::string(l.msg.sync_completion ? "sync" : "async"); }),
      link_uint("spin_us", "fabric|ucx", +[](LinkOptions& l) -> uint32_t& { return l.msg.spin_us; }),
      {"token", nullptr,
       [](const Reader& r, const YAML::Node& n, const std::string& path, LinkOptions* l) {
         return r.get_string(n, path, true, &l->token);
       },
       [](YAML::Emitter& e, const LinkOptions& l) {
         e << YAML::Key << "token" << YAML::Value << YAML::DoubleQuoted << l.token;
       }},
  };
  return k;
}

const LinkKey* find_link_key(const std::string& name) {
  for (const auto& k : link_keys())
    if (k.name == name) return &k;
  return nullptr;
}

// One top-level key that is not a link key: how it is read into a Deployment
// and written back.
struct Key {
  std::string name;
  std::function<Status(const Reader&, const YAML::Node&, Deployment*)> read;
  std::function<void(YAML::Emitter&, const Deployment&)> write;
};

template <class T>
Key uint_key(const char* name, T Deployment::*m) {
  return {name,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) { return r.get(n, name, &(d->*m)); },
          [=](YAML::Emitter& e, const Deployment& d) { e << YAML::Key << name << YAML::Value << uint64_t(d.*m); }};
}

Key double_key(const char* name, double Deployment::*m) {
  return {name,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) {
            return r.get_double(n, name, &(d->*m));
          },
          [=](YAML::Emitter& e, const Deployment& d) {
            e << YAML::Key << name << YAML::Value << fmt_double(d.*m);
          }};
}

Key enum_key(const char* name, const std::vector<std::string>* allowed,
             std::function<void(Deployment*, const std::string&)> set,
             std::function<std::string(const Deployment&)> get) {
  return {name,
          [=](const Reader& r, const YAML::Node& n, Deployment* d) {
            std::string v;
            if (Status st = r.get_enum(n, name, *allowed, &v); !st) return st;
            set(d, v);
            return Status();
          },
          [=](YAML::Emitter& e, const Deployment& d) {
            e << YAML::Key << name << YAML::Value << get(d);
          }};
}

// In the order dump_deployment writes them, after `preset` and the link keys.
// `preset`, `host`, `processes` and `links` are read specially (parse_root).
// A string key that may be left out; written back only when set.
Key string_key(const char* name, std::string Deployment::*m) {
  return {name,
          [name, m](const Reader& r, const YAML::Node& n, Deployment* d) {
            return r.get_string(n, name, false, &(d->*m));
          },
          [name, m](YAML::Emitter& e, const Deployment& d) {
            if (!(d.*m).empty()) e << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << d.*m;
          }};
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      enum_key("handover", &kHandovers,
               [](Deployment* d, const std::string& v) { d->handover_copy = v == "copy"; },
               [](const Deployment& d) { return std::string(d.handover_copy ? "copy" : "descriptor"); }),
      {"schema",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_string(n, "schema", true, &d->link.schema);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "schema" << YAML::Value << YAML::DoubleQuoted << d.link.schema;
       }},
      // The stream.
      uint_key("tuple_bytes", &Deployment::tuple_bytes),
      uint_key("event_bytes", &Deployment::event_bytes),
      uint_key("data_bytes", &Deployment::data_bytes),
      double_key("duration_s", &Deployment::duration_s),
      uint_key("tuples", &Deployment::tuples),
      double_key("rate", &Deployment::rate),
      uint_key("burst_events", &Deployment::burst_events),
      double_key("burst_ms", &Deployment::burst_ms),
      uint_key("burst_head_events", &Deployment::burst_head_events),
      uint_key("streams", &Deployment::streams),
      uint_key("instances", &Deployment::instances),
      // The node.
      enum_key("wait", &kWaits,
               [](Deployment* d, const std::string& v) { parse_wait(v, &d->wait); },
               [](const Deployment& d) { return std::string(wait_name(d.wait)); }),
      uint_key("ring_slots", &Deployment::ring_slots),
      uint_key("loadgen_slots", &Deployment::loadgen_slots),
      // Accounting.
      double_key("clock_ghz", &Deployment::clock_ghz),
      double_key("peak_watts", &Deployment::peak_watts),
      double_key("progress_s", &Deployment::progress_s),
      uint_key("base_port", &Deployment::base_port),
      // Where the processes run (`hosts:` is read specially).
      enum_key("launcher", &kLaunchers, [](Deployment* d, const std::string& v) { d->launcher = v; },
               [](const Deployment& d) { return d.launcher; }),
      string_key("ssh_key", &Deployment::ssh_key),
      string_key("ssh_options", &Deployment::ssh_options),
      string_key("remote_dir", &Deployment::remote_dir),
      enum_key("copy_binaries", &kOnOff,
               [](Deployment* d, const std::string& v) { d->copy_binaries = v == "on"; },
               [](const Deployment& d) { return std::string(d.copy_binaries ? "on" : "off"); }),
      {"host_rate",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_rate(n, "host_rate", &d->host_rate_bps);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "host_rate" << YAML::Value << rate_name(d.host_rate_bps);
       }},
      {"subnet",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         if (Status st = r.get_string(n, "subnet", true, &d->subnet); !st) return st;
         if (!d->subnet.empty() && !parse_subnet(d->subnet, nullptr, nullptr))
           return r.error(n, "subnet",
                          fmt::format("expected an IPv4 subnet a.b.c.d/n (n 1..30), got '{}'",
                                      d->subnet));
         return Status();
       },
       [](YAML::Emitter& e, const Deployment& d) {
         e << YAML::Key << "subnet" << YAML::Value << YAML::DoubleQuoted << d.subnet;
       }},
      // Metrics.
      enum_key("metrics", &kOnOff, [](Deployment* d, const std::string& v) { d->metrics = v == "on"; },
               [](const Deployment& d) { return std::string(d.metrics ? "on" : "off"); }),
      {"metrics_address",
       [](const Reader& r, const YAML::Node& n, Deployment* d) {
         return r.get_string(n, "metrics_address", false, &d->metrics_address);
       },
       [](YAML::Emitter& e, const Deployment& d) {
         if (!d.metrics_address.empty())  // "": the default, the process's own address
           e << YAML::Key << "metrics_address" << YAML::Value << d.metrics_address;
       }},
      uint_key("metrics_port", &Deployment::metrics_port),
  };
  return k;
}

const std::vector<std::string>& key_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"preset", "host", "hosts", "schemas", "processes", "links"};
    for (const auto& k : link_keys()) v.push_back(k.name);
    for (const auto& k : keys()) v.push_back(k.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& link_entry_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"from", "to", "port", "preset"};
    for (const auto& k : link_keys()) v.push_back(k.name);
    return v;
  }();
  return names;
}

// ---------------------------------------------------------------- overrides

// Which part of the schema a YAML node stands for; says which keys a map
// may have when an override walks into it.
enum class Shape {
  kRoot, kHostList, kHost, kProcessList, kProcess, kOperatorList, kOperator, kFilter, kLinkList,
  kLink, kOther
};

Shape child_shape(Shape s, const std::string& key) {
  switch (s) {
    case Shape::kRoot:
      return key == "processes" ? Shape::kProcessList
             : key == "links"   ? Shape::kLinkList
             : key == "hosts"   ? Shape::kHostList
                                : Shape::kOther;
    case Shape::kLinkList: return Shape::kLink;
    case Shape::kHostList: return Shape::kHost;
    case Shape::kProcessList: return Shape::kProcess;
    case Shape::kProcess: return key == "operators" ? Shape::kOperatorList : Shape::kOther;
    case Shape::kOperatorList: return Shape::kOperator;
    case Shape::kOperator: return key == "filter" ? Shape::kFilter : Shape::kOther;
    default: return Shape::kOther;
  }
}

const std::vector<std::string>* known_keys(Shape s) {
  switch (s) {
    case Shape::kRoot: return &key_names();
    case Shape::kProcess: return &kProcessKeys;
    case Shape::kHost: return &kHostKeys;
    case Shape::kOperator: return &kOperatorKinds;
    case Shape::kLink: return &link_entry_keys();
    default: return nullptr;
  }
}

Status apply_override(YAML::Node& root, const std::string& text, Reader* reader) {
  auto fail = [&](std::string msg) { return Status::Error(fmt::format("--set {}: {}", text, msg)); };
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return fail("expected key=value");
  const std::string path = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return fail(fmt::format("the value is not valid YAML: {}", e.msg));
  }

  std::vector<std::string> parts;
  for (size_t b = 0;;) {
    size_t dot = path.find('.', b);
    parts.push_back(path.substr(b, dot == std::string::npos ? std::string::npos : dot - b));
    if (dot == std::string::npos) break;
    b = dot + 1;
  }

  // A chain file has no `links:`: an override of one of its links first
  // writes the chain's links out, from the processes as they are now.
  if (parts[0] == "links" && parts.size() > 1 && !static_cast<const YAML::Node&>(root)["links"] &&
      root["processes"].IsSequence()) {
    YAML::Node links(YAML::NodeType::Sequence);
    const YAML::Node procs = root["processes"];
    for (size_t i = 0; i + 1 < procs.size(); ++i) {
      if (!procs[i].IsMap() || !procs[i + 1].IsMap() || !procs[i]["name"] || !procs[i + 1]["name"])
        return fail("the chain's links cannot be written out: a process has no name");
      YAML::Node l(YAML::NodeType::Map);
      l["from"] = procs[i]["name"].as<std::string>();
      l["to"] = procs[i + 1]["name"].as<std::string>();
      links.push_back(l);
    }
    root["links"] = links;
    reader->mark_chain(links, root["processes"]);
  }

  YAML::Node cur = root;
  Shape shape = Shape::kRoot;
  std::string walked;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::string here = walked.empty() ? part : walked + "." + part;
    const bool last = i + 1 == parts.size();
    if (part.empty()) return fail(fmt::format("empty name in key '{}'", path));
    if (cur.IsSequence()) {
      size_t idx = 0;
      auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), idx);
      if (ec != std::errc() || p != part.data() + part.size())
        return fail(fmt::format("'{}' is a list; '{}' is not an index", walked, part));
      if (idx >= cur.size())
        return fail(fmt::format("'{}' has {} entr{}; there is no index {}", walked, cur.size(),
                                cur.size() == 1 ? "y" : "ies", idx));
      if (last) {
        cur[idx] = value;
      } else {
        cur.reset(cur[idx]);
      }
    } else if (cur.IsMap()) {
      const auto* known = known_keys(shape);
      const YAML::Node& view = cur;  // const: looking must not insert
      const bool present = view.IsMap() && view[part].IsDefined();
      if (!present && known && std::find(known->begin(), known->end(), part) == known->end())
        return fail(fmt::format("unknown key '{}'{}", here, did_you_mean(part, *known)));
      if (!present && !known) return fail(fmt::format("'{}' has no key '{}'", walked, part));
      if (last) {
        cur[part] = value;
      } else {
        if (!present) return fail(fmt::format("'{}' is not set in the file", here));
        cur.reset(cur[part]);
      }
    } else {
      return fail(fmt::format("'{}' is {}, it has no '{}'", walked, node_kind(cur), part));
    }
    shape = child_shape(shape, part);
    walked = here;
  }
  reader->mark_override(value, text);
  return {};
}

// Where keys were given: the top level's (root = the top-level map), or one
// link's or process's own (root = its line; `of` holds only the keys it set,
// each "file:line" or "--set k=v").
struct Places {
  std::string root;                       // file:line of the top-level map, link or process
  std::map<std::string, std::string> of;  // key -> where it was given
  std::string at(const std::string& key) const {
    auto it = of.find(key);
    return it == of.end() ? root : it->second;
  }
  Status error(const std::string& key, const std::string& msg) const { return error(key, key, msg); }
  // `shown`: the key as the message names it (links.2.slot_bytes for a
  // link's slot_bytes).
  Status error(const std::string& shown, const std::string& key, const std::string& msg) const {
    const std::string w = at(key);
    if (w.rfind("--set ", 0) == 0) return Status::Error(fmt::format("{}: {}", w, msg));
    return Status::Error(fmt::format("{}: key '{}': {}", w, shown, msg));
  }
};

// ---------------------------------------------------------------- processes

// One operator: a map with one key naming its kind, whose keys are the
// parameters its OperatorSpec declares (graph/operator.h): checked here for
// names and types, defaults filled in; fields are checked against the
// schema once the graph's schemas are resolved.
Status parse_operator(const Reader& r, const YAML::Node& n, const std::string& path,
                      OperatorConfig* op) {
  if (!n.IsMap() || n.size() != 1)
    return r.error(n, path,
                   fmt::format("an operator is a map with exactly one key naming its kind ({})",
                               join(kOperatorKinds)));
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kOperatorKinds, &kv); !st) return st;
  op->kind = kv[0].first.Scalar();
  op->source_line = r.where(kv[0].first);
  op->path = path + "." + op->kind;
  const OperatorSpec* spec = find_operator_spec(op->kind);
  const YAML::Node& body = kv[0].second;
  const std::string bpath = path + "." + op->kind;
  std::vector<std::string> known;
  for (const auto& p : spec->params) known.push_back(p.key);
  std::vector<std::pair<YAML::Node, YAML::Node>> fields;
  if (!body.IsNull()) {
    if (!body.IsMap())
      return r.error(body, bpath, fmt::format("expected a map, got {}", node_kind(body)));
    if (Status st = r.keys_of(body, bpath, known, &fields); !st) return st;
  }
  op->params.clear();
  for (const auto& p : spec->params) {
    const YAML::Node* given = nullptr;
    for (auto& [k, v] : fields)
      if (k.Scalar() == p.key) given = &v;
    const std::string kpath = bpath + "." + p.key;
    std::string text;
    if (!given) {
      if (!p.def)
        return r.error(n, "", fmt::format("{}: operator '{}' needs '{}' ({}: {})", path, op->kind,
                                          p.key, param_type_name(p.type), p.doc));
      text = p.def;
    } else if (given->IsSequence() && p.type == ParamType::kFieldList) {
      for (auto e : *given) text += (text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
    } else if (given->IsScalar()) {
      text = given->Scalar();
    } else {
      return r.error(*given, kpath,
                     fmt::format("expected {}, got {}", param_type_name(p.type), node_kind(*given)));
    }
    if (given)
      if (std::string e = check_param(p, text, nullptr); !e.empty())
        return r.error(*given, kpath, e);
    op->params.emplace_back(p.key, text);
    op->param_lines.push_back(given ? r.where(*given) : std::string());
  }
  return {};
}

// One field of a schema: name, type, width (bytes), gen.
Status parse_field(const Reader& r, const YAML::Node& n, const std::string& path, FieldSpec* f,
                   FieldGen* g) {
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kFieldKeys, &kv); !st) return st;
  bool have_name = false, have_type = false, have_gen = false;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "name") {
      have_name = true;
      st = r.get_string(v, kpath, false, &f->name);
    } else if (key == "type") {
      have_type = true;
      std::string t;
      st = r.get_enum(v, kpath, {"i32", "i64", "u32", "u64", "f64", "timestamp", "bytes"}, &t);
      if (st) parse_field_type(t, &f->type);
    } else if (key == "width") {
      st = r.get(v, kpath, &f->width);
    } else if (key == "gen") {
      have_gen = true;
      // `gen: sequence` | `gen: random` | `gen: {uniform: N}` | `gen: {zipf: N, s: 1.2}` |
      // `gen: {constant: V}` | `gen: {sequence: OFFSET}`
      std::string kind;
      YAML::Node arg;
      if (v.IsScalar()) {
        kind = v.Scalar();
      } else if (v.IsMap()) {
        for (auto e : v) {
          const std::string ek = e.first.IsScalar() ? e.first.Scalar() : "";
          if (ek == "s") {
            st = r.get_double(e.second, kpath + ".s", &g->s);
          } else if (kind.empty()) {
            kind = ek;
            arg = e.second;
          } else {
            st = r.error(e.first, kpath, "a generator is one of its kinds (and `s` for zipf)");
          }
          if (!st) return st;
        }
      }
      if (std::find(kGenKinds.begin(), kGenKinds.end(), kind) == kGenKinds.end())
        return r.error(v, kpath, fmt::format("expected a generator ({}), got '{}'{}", join(kGenKinds),
                                             kind, did_you_mean(kind, kGenKinds)));
      g->kind = kind == "sequence"  ? FieldGen::Kind::kSequence
                : kind == "uniform" ? FieldGen::Kind::kUniform
                : kind == "zipf"    ? FieldGen::Kind::kZipf
                : kind == "constant" ? FieldGen::Kind::kConstant
                                     : FieldGen::Kind::kRandom;
      const bool needs_card = g->kind == FieldGen::Kind::kUniform || g->kind == FieldGen::Kind::kZipf;
      if (needs_card) {
        if (!arg.IsDefined() || arg.IsNull())
          return r.error(v, kpath, fmt::format("{} needs a cardinality: {{{}: N}}", kind, kind));
        st = r.get(arg, kpath + "." + kind, &g->cardinality);
        if (st && g->cardinality == 0) st = r.error(arg, kpath + "." + kind, "must be at least 1");
        if (st && g->kind == FieldGen::Kind::kZipf && g->cardinality > (1u << 24))
          st = r.error(arg, kpath + ".zipf", "at most 16777216 (its table is made once)");
      } else if (arg.IsDefined() && !arg.IsNull()) {
        if (!arg.IsScalar()) return r.error(arg, kpath, "expected a number");
        char* end = nullptr;
        g->value = std::strtoll(arg.Scalar().c_str(), &end, 0);
        if (arg.Scalar().empty() || *end) st = r.error(arg, kpath, fmt::format("expected an integer, got '{}'", arg.Scalar()));
      }
    }
    if (!st) return st;
  }
  if (!have_name || !have_type)
    return r.error(n, "", fmt::format("{}: missing required key '{}'", path, have_name ? "type" : "name"));
  if (!have_gen) g->kind = f->type == FieldType::kBytes ? FieldGen::Kind::kRandom : FieldGen::Kind::kSequence;
  return {};
}

Status parse_schemas(const Reader& r, const YAML::Node& n, Deployment* d) {
  if (n.IsNull()) return {};
  if (!n.IsMap())
    return r.error(n, "schemas", fmt::format("expected a map of name -> {{fields: [...]}}, got {}",
                                             node_kind(n)));
  for (auto kv : n) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const std::string path = "schemas." + name;
    const YAML::Node& body = kv.second;
    if (!body.IsMap()) return r.error(body, path, fmt::format("expected a map, got {}", node_kind(body)));
    std::vector<std::pair<YAML::Node, YAML::Node>> keys;
    if (Status st = r.keys_of(body, path, kSchemaKeys, &keys); !st) return st;
    SchemaConfig sc;
    sc.source_line = r.where(kv.first);
    std::vector<FieldSpec> fields;
    uint32_t tuple_bytes = 0;
    bool have_fields = false;
    for (auto& [k, v] : keys) {
      const std::string kpath = path + "." + k.Scalar();
      if (k.Scalar() == "tuple_bytes") {
        if (Status st = r.get(v, kpath, &tuple_bytes); !st) return st;
      } else {
        have_fields = true;
        if (!v.IsSequence() || v.size() == 0)
          return r.error(v, kpath, "expected a list of fields ({name, type, width, gen})");
        for (size_t i = 0; i < v.size(); ++i) {
          FieldSpec f;
          FieldGen g;
          if (Status st = parse_field(r, v[i], fmt::format("{}.{}", kpath, i), &f, &g); !st) return st;
          fields.push_back(f);
          sc.gens.push_back(g);
        }
      }
    }
    if (!have_fields) return r.error(kv.first, "", fmt::format("{}: missing required key 'fields'", path));
    if (name == "default" || name == "sluice.tuple")
      return r.error(kv.first, "", fmt::format("{}: '{}' is the default schema's name", path, name));
    if (Status st = Schema::make(name, std::move(fields), tuple_bytes, &sc.schema); !st)
      return r.error(kv.first, path, st.message());
    if (d->find_schema(name))
      return r.error(kv.first, path, fmt::format("schema '{}' declared twice", name));
    d->schemas.push_back(std::move(sc));
  }
  return {};
}

// Every process's schemas in and out, from the loadgens down: a node's
// upstreams must send one schema (a union of one schema); each operator
// checks its fields against what flows into it and says what flows out.
// Emitting operators get their derived stream's id, after every loadgen's.
Status resolve_schemas(Deployment* d, const Places& at) {
  auto& ps = d->processes;
  uint32_t next_stream = 0;
  for (const auto& p : ps)
    if (p.role == Role::kLoadgen) next_stream += d->streams;
  const uint32_t tpe_bytes = d->event_bytes;
  std::vector<size_t> order = d->start_order();
  std::reverse(order.begin(), order.end());  // loadgens first
  for (size_t i : order) {
    ProcessConfig& p = ps[i];
    if (p.role == Role::kLoadgen) {
      if (!p.schema.empty() && !d->find_schema(p.schema))
        return Status::Error(fmt::format("{}: process '{}': no schema '{}' in schemas:", p.source_line,
                                         p.name, p.schema));
      const SchemaConfig* sc = d->loadgen_schema(i);
      p.out_schema = sc ? sc->schema : Schema::default_for(d->tuple_bytes);
      if (!p.operators.empty())
        return Status::Error(fmt::format("{}: process '{}': operators run on nodes and sinks, not "
                                         "on a loadgen", p.source_line, p.name));
      continue;
    }
    if (!p.results.empty() && p.role != Role::kSink)
      return Status::Error(fmt::format("{}: process '{}': only a sink writes `results`",
                                       p.source_line, p.name));
    if (!p.schema.empty())
      return Status::Error(fmt::format("{}: process '{}': only a loadgen names its schema; a {} "
                                       "takes its upstream's", p.source_line, p.name, role_name(p.role)));
    size_t first_in = SIZE_MAX;
    for (size_t l : d->inputs_of(i)) {
      const ProcessConfig& up = ps[d->links[l].from];
      if (first_in == SIZE_MAX) {
        first_in = d->links[l].from;
        p.in_schema = up.out_schema;
      } else if (!up.out_schema.same_layout(p.in_schema)) {
        return Status::Error(fmt::format(
            "{}: process '{}': a union of one schema only: '{}' sends {}, '{}' sends {}",
            p.source_line, p.name, ps[first_in].name, p.in_schema.describe(), up.name,
            up.out_schema.describe()));
      }
    }
    Schema cur = p.in_schema;
    for (size_t j = 0; j < p.operators.size(); ++j) {
      OperatorConfig& op = p.operators[j];
      const OperatorSpec* spec = find_operator_spec(op.kind);
      auto fail = [&](const std::string& msg) {
        return Status::Error(fmt::format("{}: process '{}', operator {} ({}): {}",
                                         op.source_line.empty() ? p.source_line : op.source_line,
                                         p.name, j, op.kind, msg));
      };
      for (size_t k = 0; k < spec->params.size(); ++k) {
        const auto& prm = spec->params[k];
        const std::string e = check_param(prm, op.get(prm.key), &cur);
        if (e.empty()) continue;
        const std::string line = k < op.param_lines.size() ? op.param_lines[k] : "";
        if (line.rfind("--set ", 0) == 0) return Status::Error(fmt::format("{}: {}", line, e));
        return Status::Error(fmt::format("{}: key '{}.{}': process '{}', operator {} ({}): {}",
                                         line.empty() ? op.source_line : line, op.path, prm.key,
                                         p.name, j, op.kind, e));
      }
      if (spec->emits) {
        if (next_stream >= kMaxStreams)
          return fail(fmt::format("its derived stream would be stream {}, beyond the {} a pipeline "
                                  "carries", next_stream, kMaxStreams));
        op.derived_stream = next_stream++;
      }
      Schema out;
      if (Status st = spec->output(op, cur, &out); !st) return fail(st.message());
      op.max_event_tuples = tuples_per_event(out.tuple_bytes(), tpe_bytes);
      cur = std::move(out);
    }
    p.out_schema = std::move(cur);
  }
  (void)at;
  return {};
}

// `split: key` hashes `split_key`, a numeric field of what the process sends
// (its out_schema), over two or more downstream links; `split_key` means
// nothing without it.
Status validate_split_keys(const Deployment& d, const std::vector<Places>& process_at) {
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const ProcessConfig& p = d.processes[i];
    const Places& at = process_at[i];
    const std::string path = fmt::format("processes.{}", i);
    if (p.split != Split::kKey) {
      if (!p.split_key.empty())
        return at.error(path + ".split_key", "split_key",
                        fmt::format("process '{}': split_key needs split: key (its split is {})",
                                    p.name, split_name(p.split)));
      continue;
    }
    if (p.split_key.empty())
      return at.error(path + ".split", "split",
                      fmt::format("process '{}': split: key needs split_key: FIELD, a numeric "
                                  "field of {}", p.name, p.out_schema.describe()));
    FieldRef f;
    if (!p.out_schema.find(p.split_key, &f) || f.type == FieldType::kBytes)
      return at.error(path + ".split_key", "split_key",
                      fmt::format("process '{}': '{}' is no numeric field of what it sends, {}",
                                  p.name, p.split_key, p.out_schema.describe()));
    if (p.role != Role::kNode)
      return at.error(path + ".split", "split",
                      fmt::format("process '{}': only a node splits by key (a {} {}); put a node "
                                  "with split: key after it", p.name, role_name(p.role),
                                  p.role == Role::kSink ? "has no downstream links"
                                                        : "splits by stream or copy"));
  }
  return {};
}

// `at`: where the process and each key it sets were given (a clash of
// ports names the line of `port`, not the process's).
Status parse_process(const Reader& r, const YAML::Node& n, size_t i, const std::string& default_host,
                     ProcessConfig* p, Places* at) {
  const std::string path = fmt::format("processes.{}", i);
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  p->source_line = r.where(n);
  p->host = default_host;
  at->root = p->source_line;
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kProcessKeys, &kv); !st) return st;
  bool have_name = false, have_role = false;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    at->of[key] = r.key_at(k, v);
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "name") {
      have_name = true;
      st = r.get_string(v, kpath, false, &p->name);
      if (st && p->name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789._-") != std::string::npos)
        st = r.error(v, kpath,
                     fmt::format("'{}': a process name may hold only letters, digits, '.', '_' "
                                 "and '-' (it names the process's log and summary files)",
                                 p->name));
    } else if (key == "role") {
      have_role = true;
      std::string role;
      st = r.get_enum(v, kpath, kRoles, &role);
      p->role = role == "loadgen" ? Role::kLoadgen : role == "sink" ? Role::kSink : Role::kNode;
    } else if (key == "host") {
      st = r.get_string(v, kpath, false, &p->host);
    } else if (key == "listen") {
      st = r.get_string(v, kpath, true, &p->listen);
    } else if (key == "split") {
      std::string sp;
      st = r.get_enum(v, kpath, kSplits, &sp);
      p->split = sp == "copy" ? Split::kCopy : sp == "key" ? Split::kKey : Split::kStream;
    } else if (key == "split_key") {
      st = r.get_string(v, kpath, false, &p->split_key);
    } else if (key == "port") {
      st = r.get(v, kpath, &p->port);
    } else if (key == "cores") {
      st = r.get_double(v, kpath, &p->cores);
    } else if (key == "pin_stages") {
      // off | on | a CPU list like a host's `cores` (0-3, "0,2", [0, 1]).
      std::string text;
      if (v.IsSequence()) {
        for (auto e : v) text += (text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
      } else if (v.IsScalar()) {
        text = v.Scalar();
      }
      p->stage_cpus.clear();
      if (text == "off" || text == "false" || text == "no") {
        p->pin_stages = false;
      } else if (text == "on" || text == "true" || text == "yes") {
        p->pin_stages = true;
      } else if (parse_cpu_list(text, &p->stage_cpus)) {
        p->pin_stages = true;
      } else {
        st = r.error(v, kpath,
                     fmt::format("expected off, on (spread the stage threads over the host's "
                                 "cores) or the CPUs to pin them to in turn (0-3, \"0,2\", [0, 1]); "
                                 "got {}",
                                 v.IsScalar() || v.IsSequence() ? "'" + text + "'" : node_kind(v)));
      }
    } else if (key == "schema") {
      st = r.get_string(v, kpath, false, &p->schema);
    } else if (key == "results") {
      st = r.get_string(v, kpath, true, &p->results);
    } else if (key == "operators") {
      if (v.IsNull()) continue;
      if (!v.IsSequence()) {
        st = r.error(v, kpath, fmt::format("expected a list of operators, got {}", node_kind(v)));
      } else {
        for (size_t j = 0; j < v.size() && st; ++j) {
          OperatorConfig op;
          st = parse_operator(r, v[j], fmt::format("{}.{}", kpath, j), &op);
          p->operators.push_back(op);
        }
      }
    }
    if (!st) return st;
  }
  if (!have_name) return r.error(n, "", fmt::format("{}: missing required key 'name'", path));
  if (!have_role)
    return r.error(n, "", fmt::format("{} ('{}'): missing required key 'role' ({})", path, p->name,
                                      join(kRoles)));
  return {};
}

// ---------------------------------------------------------------- hosts

// One host of `hosts:`. Its rate defaults to `host_rate` (read before it).
Status parse_host(const Reader& r, const YAML::Node& n, size_t i, uint64_t default_rate,
                  HostConfig* h, Places* at) {
  const std::string path = fmt::format("hosts.{}", i);
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  h->source_line = r.where(n);
  h->rate_bps = default_rate;
  at->root = h->source_line;
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, kHostKeys, &kv); !st) return st;
  bool have_name = false, have_address = false;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    at->of[key] = r.key_at(k, v);
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "name") {
      have_name = true;
      st = r.get_string(v, kpath, false, &h->name);
      if (st && h->name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789._-") != std::string::npos)
        st = r.error(v, kpath,
                     fmt::format("'{}': a host name may hold only letters, digits, '.', '_' and "
                                 "'-' (it names the host's network namespace)",
                                 h->name));
    } else if (key == "address") {
      have_address = true;
      st = r.get_string(v, kpath, false, &h->address);
    } else if (key == "cores") {
      // `cores: 0-3`, `cores: "0,2"` or `cores: [0, 1, 4-5]`: CPUs, not a count.
      std::string text;
      if (v.IsSequence()) {
        for (auto e : v) text += (text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
      } else if (v.IsScalar()) {
        text = v.Scalar();
      }
      if (!parse_cpu_list(text, &h->cpus))
        st = r.error(v, kpath,
                     fmt::format("expected the CPUs to pin to, as a list or ranges (0-3, "
                                 "\"0,2\", [0, 1]), each below 1024 and given once; got {}",
                                 v.IsScalar() || v.IsSequence() ? "'" + text + "'" : node_kind(v)));
    } else if (key == "rate") {
      st = r.get_rate(v, kpath, &h->rate_bps);
    } else if (key == "ssh_user") {
      st = r.get_string(v, kpath, true, &h->ssh_user);
    } else if (key == "ssh_port") {
      st = r.get(v, kpath, &h->ssh_port);
    }
    if (!st) return st;
  }
  if (!have_name) return r.error(n, "", fmt::format("{}: missing required key 'name'", path));
  if (!have_address)
    return r.error(n, "", fmt::format("{} ('{}'): missing required key 'address' (where its "
                                      "processes are reached)",
                                      path, h->name));
  return {};
}

// With `hosts:`, each process's `host` (its own, else the top-level `host`)
// names one of them; the process then runs there and is reached at, and
// binds, the host's address.
Status resolve_hosts(Deployment* d, const Places& at, const std::vector<Places>& process_at) {
  std::vector<std::string> names;
  for (const auto& h : d->hosts) names.push_back(h.name);
  for (size_t i = 0; i < d->processes.size(); ++i) {
    ProcessConfig& p = d->processes[i];
    const bool own = process_at[i].of.count("host") > 0;
    auto fail = [&](const std::string& msg) {
      if (own) return process_at[i].error(fmt::format("processes.{}.host", i), "host", msg);
      if (at.of.count("host")) return at.error("host", msg);
      return Status::Error(fmt::format("{}: process '{}': {}", p.source_line, p.name, msg));
    };
    if (!own && !at.of.count("host"))
      return fail(fmt::format("names no host; with hosts:, every process names one ({})",
                              join(names)));
    const HostConfig* found = nullptr;
    for (const auto& h : d->hosts)
      if (h.name == p.host) found = &h;
    if (!found) {
      std::string hint = did_you_mean(p.host, names);
      for (const auto& h : d->hosts)
        if (h.address == p.host) hint = fmt::format(" (that is the address of '{}': name the host)", h.name);
      return fail(fmt::format("process '{}': no host '{}' in hosts: ({}){}", p.name, p.host,
                              join(names), hint));
    }
    p.host_name = found->name;
    p.host = found->address;
    // Stage CPUs must be CPUs the process may run on: its host's cores.
    if (!found->cpus.empty())
      for (unsigned c : p.stage_cpus)
        if (!std::binary_search(found->cpus.begin(), found->cpus.end(), c))
          return process_at[i].error(
              fmt::format("processes.{}.pin_stages", i), "pin_stages",
              fmt::format("process '{}': CPU {} is not one of its host '{}''s cores ({}), to "
                          "which the process is pinned",
                          p.name, c, found->name, cpu_list_name(found->cpus)));
  }
  return {};
}

// ---------------------------------------------------------------- links

// One link of `links:`: from, to, port, its preset, and any link key. Its
// options start from the top level's (`base`), then its preset's choices,
// then its own keys.
Status parse_link(const Reader& r, const YAML::Node& n, size_t i, const Deployment& d,
                  const std::string& chain_at, LinkConfig* l, Places* at) {
  const std::string path = fmt::format("links.{}", i);
  if (!n.IsMap()) return r.error(n, path, fmt::format("expected a map, got {}", node_kind(n)));
  l->source_line = chain_at.empty() ? r.where(n) : chain_at;
  at->root = l->source_line;
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(n, path, link_entry_keys(), &kv); !st) return st;
  for (auto& [k, v] : kv) at->of[k.Scalar()] = r.key_at(k, v);
  std::vector<std::string> names;
  for (const auto& p : d.processes) names.push_back(p.name);
  auto process = [&](const YAML::Node& v, const std::string& kpath, size_t* out) -> Status {
    std::string name;
    if (Status st = r.get_string(v, kpath, false, &name); !st) return st;
    int idx = d.process_index(name);
    if (idx < 0)
      return r.error(v, kpath, fmt::format("no process '{}'{}", name, did_you_mean(name, names)));
    *out = static_cast<size_t>(idx);
    return {};
  };
  bool have_from = false, have_to = false;
  l->options = d.link;
  // The link's preset first: its own keys then override its choices.
  for (auto& [k, v] : kv) {
    if (k.Scalar() != "preset") continue;
    const std::string kpath = path + ".preset";
    if (Status st = r.get_string(v, kpath, false, &l->preset); !st) return st;
    if (Status st = apply_preset(l->preset, &l->options); !st) return r.error(v, kpath, st.message());
  }
  std::vector<std::pair<const LinkKey*, YAML::Node>> tcp_keys;
  for (auto& [k, v] : kv) {
    const std::string& key = k.Scalar();
    const std::string kpath = path + "." + key;
    Status st;
    if (key == "from") {
      have_from = true;
      st = process(v, kpath, &l->from);
    } else if (key == "to") {
      have_to = true;
      st = process(v, kpath, &l->to);
    } else if (key == "port") {
      st = r.get(v, kpath, &l->port);
    } else if (key == "preset") {
      continue;
    } else if (const LinkKey* lk = find_link_key(key)) {
      st = lk->read(r, v, kpath, &l->options);
      if (lk->only) tcp_keys.push_back({lk, v});
    }
    if (!st) return st;
  }
  if (!have_from || !have_to)
    return r.error(n, "", fmt::format("{}: missing required key '{}'", path, have_from ? "to" : "from"));
  for (auto& [lk, v] : tcp_keys)
    if (!key_applies(lk->only, l->options.transport))
      return r.error(v, path + "." + lk->name,
                     fmt::format("'{}' is a {} option; this link's transport is {}", lk->name,
                                 lk->only, l->options.transport));
  return {};
}

// ---------------------------------------------------------------- validate

Status validate_graph(const Deployment& d, const Places& at) {
  const auto& ps = d.processes;
  const auto& ls = d.links;
  // A chain's links have no lines of their own: its errors name the process.
  auto link_error = [&](size_t l, const std::string& key, const std::string& msg) {
    if (d.chain) {
      const ProcessConfig& p = ps[key == "to" ? ls[l].to : ls[l].from];
      return Status::Error(fmt::format("{}: process '{}': {} (with no links:, the processes form "
                                       "a chain in the order listed: loadgen, node..., sink)",
                                       p.source_line, p.name, msg));
    }
    const std::string k = fmt::format("links.{}{}", l, key.empty() ? "" : "." + key);
    return Status::Error(fmt::format("{}: key '{}': {}", ls[l].source_line, k, msg));
  };
  auto process_error = [&](size_t i, const std::string& msg) {
    return Status::Error(fmt::format("{}: process '{}' (role {}) {}{}", ps[i].source_line, ps[i].name,
                                     role_name(ps[i].role), msg,
                                     d.chain ? " (with no links:, the processes form a chain in the "
                                               "order listed: loadgen, node..., sink)"
                                             : ""));
  };
  if (ps.size() < 2)
    return at.error("processes", fmt::format("a pipeline needs at least a loadgen and a sink, got {} "
                                             "process{}", ps.size(), ps.size() == 1 ? "" : "es"));
  for (size_t l = 0; l < ls.size(); ++l) {
    const ProcessConfig& f = ps[ls[l].from];
    const ProcessConfig& t = ps[ls[l].to];
    if (ls[l].from == ls[l].to)
      return link_error(l, "to", fmt::format("a link from '{}' to itself", f.name));
    if (f.role == Role::kSink)
      return link_error(l, "from", fmt::format("'{}' is a sink; a sink has no downstream", f.name));
    if (t.role == Role::kLoadgen)
      return link_error(l, "to", fmt::format("'{}' is a loadgen; a loadgen has no upstream", t.name));
    for (size_t m = 0; m < l; ++m)
      if (ls[m].from == ls[l].from && ls[m].to == ls[l].to)
        return link_error(l, "", fmt::format("the link {} -> {} is given twice (first at {})",
                                             f.name, t.name, ls[m].source_line));
  }
  size_t loadgens = 0, sinks = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    const size_t in = d.inputs_of(i).size(), out = d.outputs_of(i).size();
    loadgens += ps[i].role == Role::kLoadgen;
    sinks += ps[i].role == Role::kSink;
    if (ps[i].role != Role::kLoadgen && in == 0) return process_error(i, "has no upstream link");
    if (ps[i].role != Role::kSink && out == 0) return process_error(i, "has no downstream link");
  }
  if (loadgens == 0 || sinks == 0)
    return at.error("processes", "a pipeline needs at least one loadgen and one sink");
  // A cycle: depth-first, naming the processes around it.
  std::vector<int> state(ps.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<size_t> path;
  std::function<Status(size_t)> visit = [&](size_t i) -> Status {
    state[i] = 1;
    path.push_back(i);
    for (size_t l : d.outputs_of(i)) {
      const size_t j = ls[l].to;
      if (state[j] == 1) {
        std::string names;
        auto it = std::find(path.begin(), path.end(), j);
        for (; it != path.end(); ++it) names += ps[*it].name + " -> ";
        return link_error(l, "", fmt::format("the links form a cycle: {}{}", names, ps[j].name));
      }
      if (state[j] == 0)
        if (Status st = visit(j); !st) return st;
    }
    path.pop_back();
    state[i] = 2;
    return {};
  };
  for (size_t i = 0; i < ps.size(); ++i)
    if (state[i] == 0)
      if (Status st = visit(i); !st) return st;
  return {};
}

// `link_at[l]`: where link l and the keys it set itself were given;
// `process_at[i]` the same for process i.
Status validate(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                const std::vector<Places>& process_at) {
  if (d.tuple_bytes < kMinTupleBytes)
    return at.error("tuple_bytes", fmt::format("must be at least {} (sequence and key), got {}",
                                               kMinTupleBytes, d.tuple_bytes));
  if (d.ring_slots < 2 || (d.ring_slots & (d.ring_slots - 1)) != 0)
    return at.error("ring_slots", fmt::format("must be a power of two >= 2, got {}", d.ring_slots));
  if (d.loadgen_slots < 1) return at.error("loadgen_slots", "must be at least 1");
  if (d.instances < 1) return at.error("instances", "must be at least 1");
  if (d.streams < 1 || d.streams > kMaxStreams)
    return at.error("streams", fmt::format("must be 1..{}, got {}", kMaxStreams, d.streams));
  if (d.duration_s <= 0 && d.tuples == 0)
    return at.error(at.of.count("duration_s") ? "duration_s" : "tuples",
                    "the load generator needs duration_s > 0 or tuples > 0");
  if (d.clock_ghz <= 0) return at.error("clock_ghz", "must be greater than 0");
  if (d.metrics && d.metrics_port != 0 && d.metrics_port + d.processes.size() - 1 > 65535)
    return at.error("metrics_port",
                    fmt::format("process {} ('{}') would serve metrics on port {}, beyond 65535; "
                                "lower metrics_port, or 0 for any free port",
                                d.processes.size() - 1, d.processes.back().name,
                                d.metrics_port + d.processes.size() - 1));
  if (d.burst_events > 0 && d.burst_ms <= 0)
    return at.error("burst_ms", "must be greater than 0 when burst_events is set");
  if (Status st = validate_graph(d, at); !st) return st;

  uint64_t all_streams = 0;
  for (size_t i = 0; i < d.processes.size(); ++i)
    if (d.processes[i].role == Role::kLoadgen) all_streams += d.streams;
  if (all_streams > kMaxStreams)
    return at.error("streams", fmt::format("{} load generators x {} streams = {} streams, more than "
                                           "the {} a pipeline carries",
                                           all_streams / d.streams, d.streams, all_streams,
                                           kMaxStreams));
  const uint32_t tpe = tuples_per_event(d.tuple_bytes, d.event_bytes);
  const size_t wire = event_wire_bytes(d.tuple_bytes, tpe, d.data_bytes);
  for (size_t l = 0; l < d.links.size(); ++l) {
    const LinkOptions& o = d.links[l].options;
    const std::string name = link_name(d, l);
    // The key `key` of link l is wrong: named where the link set it, else
    // where the top level did, else at the link's line (the top-level map's
    // for a chain).
    auto err = [&](const std::string& key, const std::string& msg) {
      if (link_at[l].of.count(key) || (!d.chain && !at.of.count(key)))
        return link_at[l].error(fmt::format("links.{}.{}", l, key), key, name + ": " + msg);
      return at.error(key, name + ": " + msg);
    };
    if (o.slots < 1) return err("slots", "must be at least 1");
    if (o.slot_bytes < 1) return err("slot_bytes", "must be at least 1");
    if (o.tcp.read_bytes < 1) return err("read_bytes", "must be at least 1");
    if (wire + sizeof(FrameHeader) > o.slot_bytes) {
      const std::string msg = fmt::format(
          "an event does not fit a slot: {} tuples of {} bytes + {}-byte header + {} data bytes "
          "= {} bytes, plus a {}-byte frame header, is more than slot_bytes {}; raise slot_bytes "
          "or lower event_bytes",
          tpe, d.tuple_bytes, kEventHeaderBytes, d.data_bytes, wire, sizeof(FrameHeader),
          o.slot_bytes);
      if (link_at[l].of.count("slot_bytes")) return err("slot_bytes", msg);
      // The link has the top level's slot: name the top-level key given (on
      // a chain every link has that slot, so no link is named).
      std::string key = "event_bytes";
      if (!at.of.count("event_bytes")) {
        if (at.of.count("data_bytes")) key = "data_bytes";
        else if (at.of.count("slot_bytes")) key = "slot_bytes";
      }
      return at.error(key, d.chain ? msg : name + ": " + msg);
    }
    const size_t end_bytes = 8 + size_t{d.streams_into(d.links[l].to)} * sizeof(EndOfStreamEntry);
    if (end_bytes > o.slot_bytes)
      return err("slot_bytes", fmt::format("the end of the stream names {} streams ({} bytes), more "
                                           "than slot_bytes {}; raise slot_bytes or lower streams",
                                           d.streams_into(d.links[l].to), end_bytes, o.slot_bytes));
  }
  // Every link's receiver listens on its own port for each instance. An
  // error names where the port came from: the link's own `port`, else its
  // receiver's `port`, else the receiver (base_port + 100 * its place).
  auto port_at = [&](size_t l) {
    const size_t to = d.links[l].to;
    if (link_at[l].of.count("port")) return link_at[l].at("port");
    if (process_at[to].of.count("port")) return process_at[to].at("port");
    return d.chain ? d.processes[to].source_line : link_at[l].root;
  };
  std::map<std::pair<std::string, uint32_t>, std::pair<size_t, uint32_t>> used;
  for (size_t l = 0; l < d.links.size(); ++l) {
    const size_t to = d.links[l].to;
    const ProcessConfig& t = d.processes[to];
    auto err = [&](const std::string& msg) {
      if (link_at[l].of.count("port"))
        return link_at[l].error(fmt::format("links.{}.port", l), "port", msg);
      if (process_at[to].of.count("port"))
        return process_at[to].error(fmt::format("processes.{}.port", to), "port",
                                    fmt::format("process '{}': {}", t.name, msg));
      return Status::Error(fmt::format("{}: process '{}': {}", t.source_line, t.name, msg));
    };
    for (uint32_t k = 0; k < d.instances; ++k) {
      const uint32_t port = wide_link_port(d, l, k);
      const std::string instance = fmt::format(", instance {}", k);
      if (port > 65535)
        return err(fmt::format("{} would listen on port {}, beyond 65535 (lower base_port, or the "
                               "port of '{}' or of the link)",
                               link_name(d, l, instance), port, t.name));
      auto [it, fresh] = used.emplace(std::make_pair(t.bind_address(), port), std::make_pair(l, k));
      if (!fresh) {
        const auto [m, mk] = it->second;
        const std::string first_at = ", at " + port_at(m);
        return err(fmt::format("{} and {} would both listen on {}:{}; give a process or a link its "
                               "own port",
                               link_name(d, m, fmt::format(", instance {}{}", mk, first_at)),
                               link_name(d, l, instance), t.bind_address(), port));
      }
    }
  }
  return {};
}

// ---------------------------------------------------------------- syntax errors

// A flow collection (`[...]` or `{...}`) left open, or closed by the wrong
// bracket. yaml-cpp reports an unclosed one where it gave up, often the end
// of the file; the line that opened it is the one to fix.
struct OpenBracket {
  char open = 0;
  int line = 0;            // 1-based
  char closed_by = 0;      // 0: never closed
  int closed_line = 0;
  std::vector<std::pair<char, int>> outer;  // still open around it: bracket, line
};

// Scans `text` line by line for brackets as YAML reads them: outside quoted
// scalars, comments and block scalars (| and >), and outside flow context
// only where a value starts (`key: [`, `- {`), not inside a plain scalar
// (`host: a[1]`). Returns the first bracket closed by the wrong one, else the
// innermost one never closed; nothing when every bracket closes.
std::optional<OpenBracket> find_open_bracket(std::string_view text) {
  std::vector<std::pair<char, int>> open;  // bracket, line
  char quote = 0;                          // inside a quoted scalar: its quote
  int block_indent = -1;                   // inside a block scalar: its key's indent
  int line_no = 0;
  for (size_t b = 0; b <= text.size();) {
    size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = text.substr(b, e - b);
    b = e + 1;
    ++line_no;
    const size_t first = line.find_first_not_of(" \t\r");
    const int indent = first == std::string_view::npos ? -1 : static_cast<int>(first);
    if (block_indent >= 0) {
      if (indent < 0 || indent > block_indent) continue;
      block_indent = -1;
    }
    char prev = 0;  // the last character before this one that was not a space
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quote == '"') {
        if (c == '\\') ++i;
        else if (c == '"') quote = 0;
        continue;
      }
      if (quote == '\'') {
        if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'') ++i;
        else if (c == '\'') quote = 0;
        continue;
      }
      const bool after_space = i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t';
      if (c == '#' && after_space) break;
      if (c == ' ' || c == '\t' || c == '\r') continue;
      const bool value_starts = prev == 0 || prev == ':' || prev == '-' || prev == '?' ||
                                prev == ',' || prev == '[' || prev == '{';
      const bool in_flow = !open.empty();
      if ((c == '"' || c == '\'') && value_starts && (after_space || in_flow)) {
        quote = c;
      } else if ((c == '[' || c == '{') && (in_flow || (value_starts && after_space))) {
        open.emplace_back(c, line_no);
      } else if ((c == ']' || c == '}') && in_flow) {
        const auto [o, at] = open.back();
        if ((o == '[') != (c == ']')) {
          open.pop_back();
          return OpenBracket{o, at, c, line_no, std::move(open)};
        }
        open.pop_back();
      } else if ((c == '|' || c == '>') && !in_flow && value_starts && after_space) {
        // `key: |` (indicators and a comment may follow): a block scalar,
        // whose lines, indented deeper than this one, are text.
        std::string_view rest = line.substr(i + 1);
        rest = rest.substr(0, rest.find(" #"));
        if (rest.find_first_not_of("+-0123456789 \t\r") == std::string_view::npos) {
          block_indent = indent;
          break;
        }
      }
      prev = c;
    }
  }
  if (open.empty()) return std::nullopt;
  OpenBracket r;
  std::tie(r.open, r.line) = open.back();
  open.pop_back();
  r.outer = open;
  return r;
}

// yaml-cpp's syntax error, as "FILE:LINE: invalid YAML: ...". An unclosed
// or mismatched bracket at or before the line where the parser gave up is
// named at the line that opened it.
Status syntax_error(std::string_view text, const std::string& name, const YAML::ParserException& e) {
  const int gave_up = e.mark.line + 1;
  const std::optional<OpenBracket> b = find_open_bracket(text);
  if (!b || b->line > gave_up)
    return Status::Error(fmt::format("{}:{}: invalid YAML: {}", name, gave_up, e.msg));
  std::string what = b->closed_by
                         ? fmt::format("closed by '{}' on line {}", b->closed_by, b->closed_line)
                         : "never closed";
  for (auto it = b->outer.rbegin(); it != b->outer.rend(); ++it)
    what += fmt::format(", inside the '{}' of line {}", it->first, it->second);
  return Status::Error(fmt::format("{}:{}: invalid YAML: '{}' opened here is {} (the parser "
                                   "stopped at line {}: {})",
                                   name, b->line, b->open, what, gave_up, e.msg));
}

// ---------------------------------------------------------------- the root

Status parse_root(const Reader& r, const YAML::Node& root, Deployment* d) {
  if (!root.IsMap())
    return r.error(root, "", fmt::format("a deployment is a map of keys, got {}", node_kind(root)));
  std::vector<std::pair<YAML::Node, YAML::Node>> kv;
  if (Status st = r.keys_of(root, "", key_names(), &kv); !st) return st;
  Places places{r.file_line(root), {}};
  std::map<std::string, YAML::Node> given;
  for (auto& [k, v] : kv) {
    given[k.Scalar()] = v;
    places.of[k.Scalar()] = r.key_at(k, v);
  }

  // The preset first: explicit keys then override its choices.
  if (auto it = given.find("preset"); it != given.end()) {
    if (Status st = r.get_string(it->second, "preset", false, &d->preset); !st) return st;
  }
  if (Status st = apply_preset(d->preset, &d->link); !st)
    return given.count("preset") ? r.error(given["preset"], "preset", st.message()) : st;
  // The one node-level choice of a preset: original Borealis hands each event
  // from stage to stage as a fresh copy (the study's section 3.2).
  d->handover_copy = d->preset == "original";

  std::string default_host = ProcessConfig().host;
  if (auto it = given.find("host"); it != given.end())
    if (Status st = r.get_string(it->second, "host", false, &default_host); !st) return st;

  for (const auto& key : link_keys()) {
    auto it = given.find(key.name);
    if (it == given.end()) continue;
    if (Status st = key.read(r, it->second, key.name, &d->link); !st) return st;
  }
  for (const auto& key : keys()) {
    auto it = given.find(key.name);
    if (it == given.end()) continue;
    if (Status st = key.read(r, it->second, d); !st) return st;
  }
  if (auto it = given.find("schemas"); it != given.end())
    if (Status st = parse_schemas(r, it->second, d); !st) return st;
  // A named schema sets the tuple size of the loadgens' stream.
  if (const SchemaConfig* sc = d->find_schema(d->link.schema)) {
    if (given.count("tuple_bytes") && d->tuple_bytes != sc->schema.tuple_bytes())
      return places.error("tuple_bytes",
                          fmt::format("{} bytes, but schema '{}' ({}) has tuples of {} bytes; leave "
                                      "tuple_bytes out or give the schema its tuple_bytes",
                                      d->tuple_bytes, sc->schema.name(), sc->source_line,
                                      sc->schema.tuple_bytes()));
    d->tuple_bytes = sc->schema.tuple_bytes();
  }
  d->link.tuple_bytes = d->tuple_bytes;
  d->link.wait = d->wait;

  std::vector<Places> host_places;
  if (auto hit = given.find("hosts"); hit != given.end() && !hit->second.IsNull()) {
    const YAML::Node& list = hit->second;
    if (!list.IsSequence())
      return r.error(list, "hosts", fmt::format("expected a list of hosts, got {}", node_kind(list)));
    for (size_t i = 0; i < list.size(); ++i) {
      HostConfig h;
      host_places.emplace_back();
      if (Status st = parse_host(r, list[i], i, d->host_rate_bps, &h, &host_places.back()); !st)
        return st;
      for (size_t j = 0; j < d->hosts.size(); ++j) {
        if (d->hosts[j].name == h.name)
          return host_places.back().error(fmt::format("hosts.{}.name", i), "name",
                                          fmt::format("duplicate host name '{}' (first at {})",
                                                      h.name, d->hosts[j].source_line));
        if (d->hosts[j].address == h.address)
          return host_places.back().error(
              fmt::format("hosts.{}.address", i), "address",
              fmt::format("hosts '{}' and '{}' have one address, {} (first at {}); each host is "
                          "reached at its own",
                          d->hosts[j].name, h.name, h.address, host_places[j].at("address")));
      }
      d->hosts.push_back(std::move(h));
    }
  }

  auto pit = given.find("processes");
  if (pit == given.end())
    return Status::Error(fmt::format("{}: missing required key 'processes' (loadgen, node..., "
                                     "sink)",
                                     places.root));
  const YAML::Node& list = pit->second;
  if (!list.IsSequence())
    return r.error(list, "processes", fmt::format("expected a list of processes, got {}", node_kind(list)));
  std::map<std::string, std::string> first_at;
  std::vector<Places> process_places(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    ProcessConfig p;
    if (Status st = parse_process(r, list[i], i, default_host, &p, &process_places[i]); !st)
      return st;
    if (auto [it, fresh] = first_at.emplace(p.name, p.source_line); !fresh)
      return Status::Error(fmt::format("{}: duplicate process name '{}' (first at {})",
                                       p.source_line, p.name, it->second));
    d->processes.push_back(std::move(p));
  }
  if (!d->hosts.empty())
    if (Status st = resolve_hosts(d, places, process_places); !st) return st;

  std::vector<Places> link_places;
  auto lit = given.find("links");
  if (lit == given.end()) {
    // The shorthand: the processes form a chain in the order listed.
    d->chain = true;
    for (size_t i = 0; i + 1 < d->processes.size(); ++i) {
      LinkConfig l;
      l.from = i;
      l.to = i + 1;
      l.options = d->link;
      l.source_line = places.at("processes");
      link_places.push_back({l.source_line, {}});
      d->links.push_back(std::move(l));
    }
  } else {
    const YAML::Node& links = lit->second;
    if (!links.IsSequence())
      return r.error(links, "links", fmt::format("expected a list of links, got {}", node_kind(links)));
    const std::string chain_at = r.is_chain(links) ? r.chain_at() : std::string();
    d->chain = !chain_at.empty();
    for (size_t i = 0; i < links.size(); ++i) {
      LinkConfig l;
      link_places.emplace_back();
      if (Status st = parse_link(r, links[i], i, *d, chain_at, &l, &link_places.back()); !st)
        return st;
      l.options.tuple_bytes = d->tuple_bytes;
      l.options.wait = d->wait;
      d->links.push_back(std::move(l));
    }
  }
  // A top-level key is the default of every link it means something to
  // (`congestion` for the tcp links, `fabric_provider` for the fabric ones)
  // and is unused by the others, so `--set preset=fabric-opt` runs a file
  // written for tcp. On a link of `links:`, a key its carrier does not have
  // is an error (parse_link).
  if (Status st = validate(*d, places, link_places, process_places); !st) return st;
  if (Status st = resolve_schemas(d, places); !st) return st;
  if (Status st = validate_split_keys(*d, process_places); !st) return st;
  for (size_t l = 0; l < d->links.size(); ++l) {
    const LinkOptions o = d->link_options(l, 0);
    d->links[l].options.tuple_bytes = o.tuple_bytes;
  }
  return {};
}

}  // namespace

Status parse_deployment(const std::string& yaml, const std::string& name,
                        const std::vector<std::string>& overrides, Deployment* out) {
  Reader reader(name);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    return syntax_error(yaml, name, e);
  } catch (const YAML::Exception& e) {
    return Status::Error(fmt::format("{}: invalid YAML: {}", name, e.what()));
  }
  Deployment d;
  d.file = name;
  try {
    if (!root.IsNull() && !root.IsMap())
      return reader.error(root, "", fmt::format("a deployment is a map of keys, got {}",
                                                node_kind(root)));
    // An empty file is an empty map: it then lacks 'processes'.
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    // Overrides of `links` go last: on a chain file the first of them writes
    // the chain's links out, from the processes as every other override left them
    // (`--set links.0.x=y --set processes.1.name=z` then works in either order).
    auto into_links = [](const std::string& o) {
      return o.rfind("links.", 0) == 0 || o.rfind("links=", 0) == 0;
    };
    for (bool links : {false, true})
      for (const auto& o : overrides)
        if (into_links(o) == links)
          if (Status st = apply_override(root, o, &reader); !st) return st;
    if (Status st = parse_root(reader, root, &d); !st) return st;
  } catch (const YAML::Exception& e) {
    // Should not happen (every access is checked); keep it a value anyway.
    return Status::Error(fmt::format("{}: {}", name, e.what()));
  }
  *out = std::move(d);
  return {};
}

Status load_deployment(const std::string& path, const std::vector<std::string>& overrides,
                       Deployment* out) {
  std::ifstream in(path);
  if (!in) return Status::Error(fmt::format("{}: cannot open the deployment file", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::Error(fmt::format("{}: read failed", path));
  return parse_deployment(text.str(), path, overrides, out);
}

std::string dump_deployment(const Deployment& d) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "preset" << YAML::Value << d.preset;
  for (const auto& key : link_keys())
    if (key_applies(key.only, d.link.transport)) key.write(e, d.link);
  for (const auto& key : keys()) key.write(e, d);
  if (!d.schemas.empty()) {
    e << YAML::Key << "schemas" << YAML::Value << YAML::BeginMap;
    for (const auto& sc : d.schemas) {
      e << YAML::Key << sc.schema.name() << YAML::Value << YAML::BeginMap;
      e << YAML::Key << "tuple_bytes" << YAML::Value << sc.schema.tuple_bytes();
      e << YAML::Key << "fields" << YAML::Value << YAML::BeginSeq;
      for (size_t i = 1; i < sc.schema.fields().size(); ++i) {
        const FieldSpec& f = sc.schema.fields()[i];
        const FieldGen& g = sc.gens[i - 1];
        e << YAML::Flow << YAML::BeginMap;
        e << YAML::Key << "name" << YAML::Value << f.name;
        e << YAML::Key << "type" << YAML::Value << field_type_name(f.type);
        if (f.type == FieldType::kBytes) e << YAML::Key << "width" << YAML::Value << f.width;
        e << YAML::Key << "gen" << YAML::Value << YAML::BeginMap;
        if (g.kind == FieldGen::Kind::kUniform || g.kind == FieldGen::Kind::kZipf)
          e << YAML::Key << field_gen_name(g.kind) << YAML::Value << g.cardinality;
        else if (g.kind == FieldGen::Kind::kRandom)
          e << YAML::Key << "random" << YAML::Value << YAML::Null;
        else
          e << YAML::Key << field_gen_name(g.kind) << YAML::Value << g.value;
        if (g.kind == FieldGen::Kind::kZipf) e << YAML::Key << "s" << YAML::Value << fmt_double(g.s);
        e << YAML::EndMap << YAML::EndMap;
      }
      e << YAML::EndSeq << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  if (!d.hosts.empty()) {
    e << YAML::Key << "hosts" << YAML::Value << YAML::BeginSeq;
    for (const auto& h : d.hosts) {
      e << YAML::Flow << YAML::BeginMap;
      e << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << h.name;
      e << YAML::Key << "address" << YAML::Value << YAML::DoubleQuoted << h.address;
      if (!h.cpus.empty())
        e << YAML::Key << "cores" << YAML::Value << YAML::DoubleQuoted << cpu_list_name(h.cpus);
      e << YAML::Key << "rate" << YAML::Value << rate_name(h.rate_bps);
      e << YAML::Key << "ssh_user" << YAML::Value << YAML::DoubleQuoted << h.ssh_user;
      e << YAML::Key << "ssh_port" << YAML::Value << h.ssh_port;
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  e << YAML::Key << "processes" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : d.processes) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << p.name;
    e << YAML::Key << "role" << YAML::Value << role_name(p.role);
    e << YAML::Key << "host" << YAML::Value << YAML::DoubleQuoted
      << (p.host_name.empty() ? p.host : p.host_name);
    e << YAML::Key << "listen" << YAML::Value << YAML::DoubleQuoted << p.listen;
    e << YAML::Key << "port" << YAML::Value << p.port;
    e << YAML::Key << "cores" << YAML::Value << fmt_double(p.cores);
    e << YAML::Key << "split" << YAML::Value << split_name(p.split);
    if (!p.split_key.empty()) e << YAML::Key << "split_key" << YAML::Value << p.split_key;
    if (!p.stage_cpus.empty())
      e << YAML::Key << "pin_stages" << YAML::Value << YAML::DoubleQuoted << cpu_list_name(p.stage_cpus);
    else
      e << YAML::Key << "pin_stages" << YAML::Value << (p.pin_stages ? "on" : "off");
    if (!p.schema.empty()) e << YAML::Key << "schema" << YAML::Value << YAML::DoubleQuoted << p.schema;
    if (!p.results.empty()) e << YAML::Key << "results" << YAML::Value << YAML::DoubleQuoted << p.results;
    e << YAML::Key << "operators" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& op : p.operators) {
      e << YAML::BeginMap << YAML::Key << op.kind << YAML::Value << YAML::BeginMap;
      for (const auto& [k, v] : op.params) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
  for (const auto& l : d.links) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "from" << YAML::Value << YAML::DoubleQuoted << d.processes[l.from].name;
    e << YAML::Key << "to" << YAML::Value << YAML::DoubleQuoted << d.processes[l.to].name;
    e << YAML::Key << "port" << YAML::Value << l.port;
    // Its keys below all beat it; written so the parsed LinkConfig is the same.
    if (!l.preset.empty()) e << YAML::Key << "preset" << YAML::Value << l.preset;
    for (const auto& key : link_keys())
      if (key_applies(key.only, l.options.transport)) key.write(e, l.options);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

std::string describe_graph(const Deployment& d) {
  std::string out = fmt::format("# graph: {} processes, {} links{}{}\n", d.processes.size(),
                                d.links.size(), d.chain ? " (a chain, in the order listed)" : "",
                                d.instances > 1 ? fmt::format(", {} instances of it", d.instances) : "");
  for (size_t l = 0; l < d.links.size(); ++l) {
    const LinkOptions o = d.link_options(l, 0);
    out += fmt::format("#   link {}: {} -> {}  {}  {}:{}\n", l, o.from, o.to,
                       carrier_name(o),
                       o.host, o.port);
  }
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const size_t in = d.inputs_of(i).size(), out_n = d.outputs_of(i).size();
    if (in < 2 && out_n < 2) continue;
    std::string what;
    if (in > 1) what = fmt::format("union of {} upstreams", in);
    if (out_n > 1)
      what += fmt::format("{}{} to {} downstreams", what.empty() ? "" : "; ",
                          d.processes[i].split == Split::kCopy  ? std::string("copy")
                          : d.processes[i].split == Split::kKey ? "split by key " + d.processes[i].split_key
                                                                : std::string("split by stream"),
                          out_n);
    out += fmt::format("#   {}: {}\n", d.processes[i].name, what);
  }
  for (const auto& p : d.processes) {
    if (p.operators.empty()) continue;
    std::string chain;
    for (const auto& op : p.operators) chain += (chain.empty() ? "" : " -> ") + op.kind;
    out += fmt::format("#   {} runs: {}\n", p.name, chain);
  }
  return out;
}

}  // namespace sluice
