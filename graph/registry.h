// graph/: may include base/ and transport/.
//
// The named choices of a deployment file that more than one place names,
// declared once: the presets and the launchers. The parser's allowed values
// and its errors, sluice-deploy's --launcher and --help, and docs/CONFIG.md
// all read these tables, so an entry added here is a choice everywhere.
//
// A launcher's executor lives in deploy/ (make_executor, deploy/executor.cc),
// which this level cannot see; deploy_launcher_test fails while a launcher
// named here has none.
#pragma once

#include <string>
#include <vector>

#include "transport/transport.h"

namespace sluice {

struct Preset {
  const char* name;
  const char* summary;              // what it chooses, in a few words
  void (*apply)(LinkOptions* link);  // its choices, over the link's options
};

// In the order docs and errors list them; the first is not the default
// (that is the `preset` key's: tcp-opt).
const std::vector<Preset>& presets();
const Preset* find_preset(const std::string& name);

struct Launcher {
  const char* name;
  const char* summary;  // how it starts the processes, one line
};

// In the order --help lists them; "local" first, the default.
const std::vector<Launcher>& launchers();

// "a, b, c": the names of either table, for messages and docs.
std::string preset_names(const char* separator = ", ");
std::string launcher_names(const char* separator = ", ");

}  // namespace sluice
