// docs/CONFIG.md is what `sluice-deploy keys --markdown` prints: a key
// declared, renamed or given another default, type or doc in
// graph/config_keys.cc must come with the regenerated file. The generated
// text is left in the build folder (CONFIG_DOC_OUT) to copy over.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/config_doc.h"

namespace sluice {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) v.push_back(line);
  return v;
}

TEST(ConfigDoc, CommittedFileMatchesTheKeyTables) {
  const std::string generated = keys_markdown();
  {
    std::ofstream out(CONFIG_DOC_OUT);
    out << generated;
  }
  std::ifstream in(SLUICE_SOURCE_DIR "/docs/CONFIG.md");
  ASSERT_TRUE(in) << "cannot read " SLUICE_SOURCE_DIR "/docs/CONFIG.md";
  std::stringstream committed;
  committed << in.rdbuf();

  const std::vector<std::string> want = lines_of(generated), have = lines_of(committed.str());
  const std::string fix = "docs/CONFIG.md is stale; regenerate it: build/deploy/sluice-deploy keys "
                          "--markdown > docs/CONFIG.md (or copy " CONFIG_DOC_OUT ")";
  for (size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "(end of file)";
    const std::string h = i < have.size() ? have[i] : "(end of file)";
    ASSERT_EQ(h, w) << "docs/CONFIG.md:" << i + 1 << " differs from the key tables.\n" << fix;
  }
  EXPECT_EQ(committed.str(), generated) << fix;  // a trailing newline, say
}

// Every key of the tables has its row, so a key cannot be missing from the doc.
TEST(ConfigDoc, EveryKeyHasARow) {
  const std::string md = keys_markdown();
  for (const char* key : {"transport", "encoding", "acks", "token", "handover", "tuple_bytes",
                          "wait", "metrics_port", "restart_backoff_ms", "launcher"})
    EXPECT_NE(md.find(std::string("| `") + key + "` |"), std::string::npos) << key;
}

}  // namespace
}  // namespace sluice
