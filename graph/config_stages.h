// graph/: internal to the deployment parser (graph/config_*.cc); not a public header.
//
// The stages after reading, called by parse_root (config_parse.cc) in this
// order once every section is read into the Deployment:
//   0. expand_parallelism (config_parallel.cc) processes with parallelism > 1
//                        become that many, their links links between replicas;
//                        pin: spread places every stage thread
//   1. resolve_hosts     (config_resolve.cc) with `hosts:`: each process's host
//   2. validate_guarantee (config_validate.cc) no key given breaks the guarantee
//   3. validate          (config_validate.cc) across keys: the graph's shape,
//                        an event fits a slot, every receiver its own port
//   4. resolve_schemas   (config_resolve.cc) every process's schema in and out
//   5. validate_split_keys (config_validate.cc) split: key hashes a field it has
//   6. validate_restarts (config_validate.cc) a process that restarts can go on
// Each gets the Places of the keys it may blame, so its errors name the line
// (or the --set) where the key to fix was given.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/config.h"
#include "graph/config_reader.h"

namespace sluice::cfg {

// `at`: the top level's keys; `process_at[i]`, `link_at[l]`: process i's,
// link l's own keys.
Status expand_parallelism(Deployment* d, const Places& at, std::vector<Places>* process_at,
                          std::vector<Places>* link_at);
Status resolve_hosts(Deployment* d, const Places& at, const std::vector<Places>& process_at);
Status validate_guarantee(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                          const std::vector<Places>& process_at);
Status validate_restarts(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                         const std::vector<Places>& process_at);
Status validate(const Deployment& d, const Places& at, const std::vector<Places>& link_at,
                const std::vector<Places>& process_at);
Status resolve_schemas(Deployment* d, const Places& at);
Status validate_split_keys(const Deployment& d, const std::vector<Places>& process_at);

// link_port before it is narrowed to 16 bits: validation refuses a result
// beyond 65535 (deployment.cc).
uint32_t wide_link_port(const Deployment& d, size_t l, uint32_t instance);
// "link 1 (node-a -> sink)", for errors; `more` goes inside the parentheses.
std::string link_name(const Deployment& d, size_t l, const std::string& more = "");

}  // namespace sluice::cfg
