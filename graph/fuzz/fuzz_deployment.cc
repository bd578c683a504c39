// Fuzzes the deployment parser with the function every program calls. The
// input is YAML text, then (after a NUL byte each) up to four `--set`
// overrides, so the override walker meets hostile paths and values too.
// Whatever the bytes, parse_deployment returns a Status: never a crash, a
// hang or an exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t b = 0;
  for (;;) {
    size_t z = all.find('\0', b);
    parts.push_back(all.substr(b, z == std::string::npos ? std::string::npos : z - b));
    if (z == std::string::npos || parts.size() == 5) break;
    b = z + 1;
  }
  std::vector<std::string> sets(parts.begin() + 1, parts.end());
  sluice::Deployment d;
  sluice::Status st = sluice::parse_deployment(parts[0], "fuzz.yaml", sets, &d);
  if (st.ok()) {
    // A deployment that parsed must dump to text that parses again.
    sluice::Deployment again;
    if (!sluice::parse_deployment(sluice::dump_deployment(d), "dump.yaml", {}, &again).ok())
      __builtin_trap();
    (void)sluice::describe_graph(d);
  }
  return 0;
}
