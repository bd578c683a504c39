// docs/CONFIG.md and docs/OPERATORS.md are what `sluice-deploy keys` and
// `sluice-deploy keys --operators` print: a key or an operator parameter
// declared, renamed or given another default, type or doc must come with the
// regenerated file. The generated text is left in the build folder
// (CONFIG_DOC_OUT_DIR) to copy over.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/config_doc.h"
#include "graph/operator.h"

namespace sluice {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) v.push_back(line);
  return v;
}

// Fails naming the first line of docs/NAME that differs from `generated`.
void expect_current(const std::string& name, const std::string& flag, const std::string& generated) {
  const std::string out_path = std::string(CONFIG_DOC_OUT_DIR) + "/" + name;
  {
    std::ofstream out(out_path);
    out << generated;
  }
  const std::string path = std::string(SLUICE_SOURCE_DIR) + "/docs/" + name;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream committed;
  committed << in.rdbuf();

  const std::vector<std::string> want = lines_of(generated), have = lines_of(committed.str());
  const std::string fix = "docs/" + name + " is stale; regenerate it: build/deploy/sluice-deploy keys" +
                          (flag.empty() ? "" : " " + flag) + " > docs/" + name + " (or copy " + out_path + ")";
  for (size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "(end of file)";
    const std::string h = i < have.size() ? have[i] : "(end of file)";
    ASSERT_EQ(h, w) << "docs/" << name << ":" << i + 1 << " differs from the declarations.\n" << fix;
  }
  EXPECT_EQ(committed.str(), generated) << fix;  // a trailing newline, say
}

TEST(ConfigDoc, ConfigMdMatchesTheKeyTables) { expect_current("CONFIG.md", "", keys_markdown()); }

TEST(ConfigDoc, OperatorsMdMatchesTheRegistry) {
  expect_current("OPERATORS.md", "--operators", operators_markdown());
}

// Every key has its row, whatever its table.
TEST(ConfigDoc, EveryKeyHasARow) {
  const std::string md = keys_markdown();
  for (const char* key : {"transport", "encoding", "acks", "token", "handover", "tuple_bytes",
                          "wait", "metrics_port", "restart_backoff_ms", "launcher", "split_key",
                          "ssh_port", "gen"})
    EXPECT_NE(md.find(std::string("| `") + key + "` |"), std::string::npos) << key;
}

// Every shipped operator has its section, with each of its parameters.
TEST(ConfigDoc, EveryOperatorAndParameterHasARow) {
  const std::string md = operators_markdown();
  for (const OperatorSpec& s : operator_specs()) {
    EXPECT_NE(md.find(std::string("\n## ") + s.kind + "\n"), std::string::npos) << s.kind;
    for (const ParamSpec& p : s.params)
      EXPECT_NE(md.find(std::string("| `") + p.key + "` |"), std::string::npos) << s.kind << "." << p.key;
  }
}

}  // namespace
}  // namespace sluice
