// docs/CONFIG.md, printed from the key tables of graph/config_keys.cc.
//
// `sluice-deploy keys --markdown` prints it; the ctest config_doc_current
// compares it with the committed docs/CONFIG.md, so a key declared, renamed
// or given another default or doc changes the file or fails the test.
#pragma once

#include <string>

namespace sluice {

// Every key of a deployment file as Markdown: its section, type, default,
// the presets that change it, the carriers that read it and its doc line.
std::string keys_markdown();

// docs/OPERATORS.md: every kind of the operator registry, its parameters
// (from its OperatorSpec) and its accounting.
std::string operators_markdown();

// The same, one line per key: "name<TAB>default<TAB>doc", for a terminal.
std::string keys_text();

}  // namespace sluice
