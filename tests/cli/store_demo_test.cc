// The `kvcs demo` store part (src/cli/store_demo.h) end to end, in-process: a local store and the
// S3 server with the ObjectCache extensions on 127.0.0.1. (The extension's own cases are in
// tests/objcache_common; run_cli_tests.py drives the kvcs binary with --no-store.)
#include <gtest/gtest.h>

#include <sstream>

#include "cli/store_demo.h"

namespace kvcs::cli {
namespace {

// The `kvcs demo` store part runs end to end: one aggregated PUT, one aggregated GET of a
// prefix, every block verified, a per-layer timeline printed.
TEST(StoreDemo, RunsEndToEnd) {
  StoreDemoOptions o;
  o.blocks = 16;
  o.prefix_blocks = 12;
  o.layers = 4;
  std::ostringstream out;
  Status s = RunStoreDemo(o, out);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << out.str();
  EXPECT_NE(out.str().find("ONE aggregated PUT"), std::string::npos);
  EXPECT_NE(out.str().find("ONE aggregated request"), std::string::npos);
  EXPECT_NE(out.str().find("check: 0 unexpected"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("total: same-host"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("corrupt\n", out.str().find("total:")),
            out.str().find("0 corrupt\n", out.str().find("total:")) + 2);
}

}  // namespace
}  // namespace kvcs::cli
