// graph/: internal to the deployment parser (graph/config_*.cc); not a public header.
//
// The schema of the deployment file: every key declared once.
//
// A link key (LinkKey) is one that every link has: the top level gives its
// default for every link, and a link of `links:` may set it for itself.
// A top-level key (Key) is one of the whole deployment (the stream, the node,
// accounting, hosts, metrics). Each declaration says the key's name, which
// carrier reads it (`only`: "tcp", "fabric", "ucx", "fabric|ucx"; none:
// every link), how it is read from YAML into the Deployment or LinkOptions
// and how it is written back; parse_root, parse_link, apply_override and
// dump_deployment all walk these tables, so a key declared here is read,
// overridden with --set, and written in the resolved file with nothing else
// to change. Its default is the initial value of its field in graph/config.h;
// the presets' choices are in apply_preset (config_keys.cc).
//
// The keys of sections (processes, hosts, schemas and their fields) are
// read by hand in config_parse.cc; their names are listed here so that
// --set and "did you mean" know them.
//
// To add a key: a field in graph/config.h (LinkOptions in transport/ for a
// link key), one entry in link_keys() or keys() in config_keys.cc with its
// type and a one-sentence doc (a key of a process or host: its SectionKey
// there and its reading in config_parse.cc), and, if the demo's users will
// reach for it, a line in deploy/examples/pipeline.yaml. docs/CONFIG.md is
// printed from these tables.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/config.h"
#include "graph/config_reader.h"

namespace sluice::cfg {

// One link key: read into a LinkOptions (the top level's defaults, or one
// link's), written back. A key with `only` belongs to those carriers
// ("tcp", "fabric", "ucx", "fabric|ucx"); others are every link's.
// `type` and `doc` are what docs/CONFIG.md says of it (one line each); its
// default and the presets' choices are found by writing default options.
struct LinkKey {
  std::string name;
  const char* only;
  std::string type;  // "unsigned integer", "sg | copy | capnp", ...
  std::string doc;   // what it does, one sentence
  std::function<Status(const Reader&, const YAML::Node&, const std::string&, LinkOptions*)> read;
  std::function<void(YAML::Emitter&, const LinkOptions&)> write;
};

// Every key a link may set, at the top level (the defaults of every link) or
// in a link of `links:`, in the order dump_deployment writes them.
const std::vector<LinkKey>& link_keys();
const LinkKey* find_link_key(const std::string& name);
// Whether a carrier-specific key (`only`) means something on a link of `transport`.
bool key_applies(const char* only, const std::string& transport);

// One top-level key that is not a link key: how it is read into a Deployment
// and written back.
struct Key {
  std::string name;
  std::string type;
  std::string doc;
  std::function<Status(const Reader&, const YAML::Node&, Deployment*)> read;
  std::function<void(YAML::Emitter&, const Deployment&)> write;
};

// The top-level keys that are not link keys, in the order dump_deployment
// writes them (after `preset` and the link keys). `preset`, `host`, `hosts`,
// `schemas`, `processes` and `links` are read specially (parse_root).
const std::vector<Key>& keys();

// Every key the top-level map may hold; every key a link of `links:` may hold.
const std::vector<std::string>& key_names();
const std::vector<std::string>& link_entry_keys();

// A key of a section read by hand (config_parse.cc): a process, a host, a
// schema or one of its fields, a link's own keys, or a top-level key with a
// section below it. Declared here for --set, "did you mean" and the docs.
struct SectionKey {
  std::string name;
  std::string def;  // the default, in words ("required", "its host", "22")
  std::string doc;
};
const std::vector<SectionKey>& root_section_keys();  // preset, host, hosts, schemas, processes, links
const std::vector<SectionKey>& process_keys();
const std::vector<SectionKey>& host_keys();
const std::vector<SectionKey>& schema_keys();

const std::vector<SectionKey>& field_keys();
const std::vector<SectionKey>& link_own_keys();  // from, to, port, preset

// The keys of the sections by name, and the values of the enums they read by hand.
extern const std::vector<std::string> kRoles;
extern const std::vector<std::string> kSplits;
extern const std::vector<std::string> kSources;
extern const std::vector<std::string> kRecordFormats;
extern const std::vector<std::string> kAutoOnOff;
extern const std::vector<std::string> kBadRecords;
extern const std::vector<std::string> kRestarts;
extern const std::vector<std::string> kThreads;
extern const std::vector<std::string> kPins;
extern const std::vector<std::string> kProcessKeys;
extern const std::vector<std::string> kSchemaKeys;
extern const std::vector<std::string> kFieldKeys;
extern const std::vector<std::string> kGenKinds;
extern const std::vector<std::string> kHostKeys;
extern const std::vector<std::string>& kOperatorKinds;  // graph/operator.h's kinds

}  // namespace sluice::cfg
