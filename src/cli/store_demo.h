// The store part of `kvcs demo` (cmd_demo.cc), over the objcache module:
//
//   #include "cli/store_demo.h"
//   kvcs::cli::StoreDemoOptions o;      // defaults: 256 blocks (4K tokens), 32 layers
//   kvcs::Status s = kvcs::cli::RunStoreDemo(o, std::cout);
//
// Starts a LocalStore on a fresh temporary directory and the S3 server (with the ObjectCache
// extensions) on an ephemeral 127.0.0.1 port, in-process; stores a synthetic Llama-3.1-8B-layout
// cache with ONE aggregated PUT (writing the prefix record); retrieves the first prefix_blocks
// blocks with ONE aggregated GET, verifying every block-layer; and prints the per-layer arrival
// timeline (time since the request, bytes, throughput). Then stops the server and removes the
// directory (unless keep_dir). Blocking; returns when done. Not reentrant with itself on one
// directory; otherwise thread-safe.
#ifndef KVCS_CLI_STORE_DEMO_H_
#define KVCS_CLI_STORE_DEMO_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "common/status.h"

namespace kvcs::cli {

struct StoreDemoOptions {
  uint32_t blocks = 256;       // blocks stored (16 tokens each): 256 = a 4K-token prefix
  uint32_t prefix_blocks = 0;  // blocks retrieved from the start; 0 = all
  uint32_t layers = 32;
  double bandwidth_cap = 0;             // bytes/s for the scheduler; 0 = unpaced
  uint64_t compute_us_per_layer = 640;  // declared to the scheduler (4K context, see scheduler.md)
  uint64_t stall_target_us = 200;
  std::string dir;  // store directory; empty = a new directory under $TMPDIR
  bool keep_dir = false;
};

Status RunStoreDemo(const StoreDemoOptions& options, std::ostream& out);

}  // namespace kvcs::cli

#endif  // KVCS_CLI_STORE_DEMO_H_
