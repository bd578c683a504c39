// graph/: internal to the deployment parser (graph/config_*.cc); not a public header.
//
// Reading YAML with positions. Every value the parser takes out of the YAML
// tree goes through a Reader, which knows where each node came from: a line
// of the file ("pipeline.yaml:12") or an override ("--set links.0.slots=8").
// Its typed getters (get, get_double, get_string, get_rate, get_enum) and
// keys_of (unknown keys with a suggestion, keys given twice) word every error
// as "FILE:LINE: key 'K': what", or "--set K=V: what" for a node an override
// put there, so no caller formats a position itself.
//
// Places remembers, after reading, where each key of the top level, of a
// process or of a link was given, so that checks made later across keys
// (validation, resolution) still name the line to fix.
//
// The pieces of the parser:
//   config_keys.h/.cc    the schema: every key once (name, carrier, read, write)
//   config_reader.h/.cc  this: positions, overrides (--set), YAML syntax errors
//   config_parse.cc      the sections (top level, hosts, processes, links) into
//                        a Deployment, presets and defaults applied in order
//   config_resolve.cc    what follows from the whole file: hosts, schemas
//   config_validate.cc   checks across keys: the graph, slots, ports
//   config_write.cc      the resolved file (dump_deployment), describe_graph
//   deployment.cc        the Deployment's own queries (ports, start order, ...)
#pragma once

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "graph/config.h"

namespace sluice::cfg {

// " (did you mean 'K'?)" for the nearest of `known` within two edits, else "".
std::string did_you_mean(std::string_view key, const std::vector<std::string>& known);
std::string join(const std::vector<std::string>& v, std::string_view sep = ", ");
const char* node_kind(const YAML::Node& n);  // "a map", "a list", ...
std::string fmt_double(double v);

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

// Applies one `--set key=value` to the YAML tree (before it is read), and
// marks what it put there so errors on it name the override.
Status apply_override(YAML::Node& root, const std::string& text, Reader* reader);

// yaml-cpp's syntax error, as "FILE:LINE: invalid YAML: ...", naming the line
// that opened an unclosed or mismatched bracket.
Status syntax_error(std::string_view text, const std::string& name, const YAML::ParserException& e);

}  // namespace sluice::cfg
