// Scratch folders: each test's sluice-it-* folder is removed when it passes
// and kept, and named, when it fails. The listener that does it is here.

#include "tests/pipeline_fixture.h"

namespace {

// The scratch folders the running test made: removed when it passes (or is
// skipped), kept and named on stderr when it fails, for the logs in them.
class ScratchCleanup : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { scratch_dirs().clear(); }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    for (const fs::path& d : scratch_dirs()) {
      std::error_code ec;
      if (t.result()->Failed())
        std::fprintf(stderr, "%s.%s failed: its scratch folder is kept: %s\n", t.test_suite_name(),
                     t.name(), d.c_str());
      else
        fs::remove_all(d, ec);
    }
    scratch_dirs().clear();
  }
};

// gtest_main runs the tests; the listener is appended before it starts them.
const bool kScratchCleanup = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ScratchCleanup);
  return true;
}();

// Two probes run by ScratchFolders below in a child process of this binary.
TEST(DISABLED_ScratchProbe, Passes) {
  std::printf("scratch: %s\n", scratch("probe-pass").c_str());
}
TEST(DISABLED_ScratchProbe, Fails) {
  std::printf("scratch: %s\n", scratch("probe-fail").c_str());
  ADD_FAILURE() << "a failing probe";
}

// A passing test leaves no sluice-it-* folder in the temp directory; a
// failing one keeps its folder and prints where it is.
TEST(ScratchFolders, RemovedOnSuccessKeptAndNamedOnFailure) {
  auto run = [](const std::string& probe, std::string* out) {
    const std::string cmd = "/proc/" + std::to_string(getpid()) +
                            "/exe --gtest_also_run_disabled_tests --gtest_filter=DISABLED_ScratchProbe." +
                            probe + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return -1;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) out->append(buf, n);
    return pclose(f);
  };
  auto folder = [](const std::string& out) {
    const auto at = out.find("scratch: ");
    return at == std::string::npos ? std::string() : out.substr(at + 9, out.find('\n', at) - at - 9);
  };
  std::string out;
  EXPECT_EQ(run("Passes", &out), 0) << out;
  const std::string passed = folder(out);
  ASSERT_FALSE(passed.empty()) << out;
  EXPECT_FALSE(fs::exists(passed)) << passed << " is left behind";

  out.clear();
  EXPECT_NE(run("Fails", &out), 0) << out;
  const std::string failed = folder(out);
  ASSERT_FALSE(failed.empty()) << out;
  EXPECT_TRUE(fs::exists(failed)) << out;
  EXPECT_NE(out.find("its scratch folder is kept: " + failed), std::string::npos) << out;
  fs::remove_all(failed);
}

}  // namespace
