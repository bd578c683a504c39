// docs/CONFIG.md, printed from the key tables of graph/config_keys.cc.
//
// `sluice-deploy keys` prints it (`keys --operators`: docs/OPERATORS.md);
// graph_config_doc_test and docs_config_reference compare them with the
// committed files, so a key or operator declared, renamed or given another
// default or doc changes the file or fails the test.
#pragma once

#include <string>

namespace sluice {

// Every key of a deployment file as Markdown: its section, type, default,
// the presets that change it, the carriers that read it and its doc line.
std::string keys_markdown();

// docs/OPERATORS.md: every kind of the operator registry, its parameters
// (from its OperatorSpec) and its accounting.
std::string operators_markdown();

}  // namespace sluice
