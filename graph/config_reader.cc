// Reading YAML with positions: the text helpers of error messages, `--set`
// overrides applied to the YAML tree, and YAML syntax errors that name the
// line to fix. (The Reader itself is in config_reader.h.)
//
// Overrides are applied to the tree before anything is read, so an override
// is checked by exactly the same code as the file: apply_override walks the
// dotted path (processes.1.host, links.0.encoding), refuses a key the schema
// does not know at that place (with a suggestion), writes the value, and
// marks the nodes it put there so that errors on them name "--set key=value".
// A chain file (no `links:`) gets its links written out first when an
// override reaches into `links.N`.
//
// yaml-cpp reports an unclosed `[` or `{` where it gave up, often the end of
// the file; find_open_bracket scans the text as YAML reads it and names the
// line that opened it instead.
#include "graph/config_reader.h"

#include <optional>
#include <tuple>

#include "graph/config_keys.h"

namespace sluice::cfg {

namespace {

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

}  // namespace

std::string did_you_mean(std::string_view key, const std::vector<std::string>& known) {
  size_t best = 3;
  std::string pick;
  for (const auto& k : known) {
    // The distance is at least the difference in length: a long key (a
    // hostile file's 4 KiB one) is not compared letter by letter with each.
    const size_t diff = key.size() > k.size() ? key.size() - k.size() : k.size() - key.size();
    if (diff >= best) continue;
    size_t d = edit_distance(key, k);
    if (d < best) best = d, pick = k;
  }
  return pick.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", pick);
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
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

}  // namespace sluice::cfg
