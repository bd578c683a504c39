// An application's end of a run (role publisher or subscriber), as an
// application finds it: sluice-deploy up and run write RUN/apps/NAME.json
// for each one, with the resolved deployment, where its links go, their
// token and its schema; the client library reads it (client/), and writes
// RUN/apps/NAME.pid once it is there, which sluice-deploy waits for.
//
//   {"name": "publisher", "role": "publisher", "run_id": "...",
//    "deployment": "/abs/RUN/resolved.yaml", "summary": "/abs/RUN/publisher.json",
//    "attach": "/abs/RUN/apps/publisher.pid", "instances": 1,
//    "links": [{"peer": "node-a", "address": "127.0.0.1:17100", "transport": "tcp",
//               "acks": false, "listens": false}],
//    "token": "...", "schema": "sluice.tuple{seq:u64,key:u32;tuple_bytes=128}",
//    "tuple_bytes": 128, "max_tuples": 255}
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/config.h"

namespace sluice {

struct AppEndpoint {
  std::string name, role, run_id;
  std::string deployment;  // the resolved file the run's processes read
  std::string summary;     // where the application's summary goes
  std::string attach;      // where the library writes "PID START_TICKS" when it opened
  uint32_t instances = 1;
  struct Link {
    std::string peer;       // the process at the other end
    std::string address;    // host:port: what it listens on (listens: this end does)
    std::string transport;  // the carrier
    bool acks = false;
    bool listens = false;   // a subscriber listens, a publisher connects
  };
  std::vector<Link> links;  // instance 0's
  std::string token;        // the links' shared secret ("" none)
  std::string schema;       // Schema::describe()
  uint32_t tuple_bytes = 0, max_tuples = 0;
};

// RUN/apps/NAME.json and RUN/apps/NAME.pid.
std::string app_endpoint_path(const std::string& run_dir, const std::string& name);
std::string app_attach_path(const std::string& run_dir, const std::string& name);

// Process `index` (an application's end) of `d` in run directory `run_dir`,
// whose resolved file is `resolved`, as one line of JSON.
AppEndpoint app_endpoint_of(const Deployment& d, size_t index, const std::string& run_dir,
                            const std::string& resolved);
std::string app_endpoint_json(const AppEndpoint& e);
Status read_app_endpoint(const std::string& path, AppEndpoint* out);

// How an application connects, in a few lines for a person (sluice-deploy
// up and run print it).
std::string app_endpoint_text(const AppEndpoint& e, const std::string& run_dir);

}  // namespace sluice
