// bench/sched: added TTFT of concurrent 4K- and 64K-context layer-pipelined retrievals under a
// bandwidth cap, stall-target scheduler vs equal sharing (the baseline, same run, same workload).
//
// Model (docs/protocols/scheduler.md): Llama-3.1-8B layout, 32 layers, 16-token blocks, 64 KiB
// per block-layer; per-layer compute from sched::ComputeModel (new suffix tokens attend over the
// cached context). Pure simulation: runs in milliseconds, deterministic.
//
// Usage: kvcs_sched_bench [--cap-gbps G] [--long N] [--short N] [--window-ms W]
//                         [--stall-us S] [--seed X] [--new-fraction F] [--verbose]
//        kvcs_sched_bench --workload FILE --cap-bytes C [--verbose]
// --workload runs the given requests instead (one a line: arrival_s blocks layers
// block_layer_bytes compute_per_layer_s stall_target_s; bench/engine/sched_store_bench.py writes
// the scaled workload it runs on the real store) under a cap of C bytes/s, and prints the table
// only (no cap sweep).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sched/simulator.h"

using namespace kvcs::sched;

namespace {

constexpr double kBlockLayerBytes = 64 * 1024;  // 16 tokens × 4 KiB per token per layer
constexpr uint32_t kLayers = 32;
constexpr uint32_t kBlockTokens = 16;

struct Config {
  double cap_gbps = 200;        // link cap in Gbit/s (two of the paper's 100 Gb RoCE links)
  int long_requests = 2;        // 64K-context requests (8 GiB of KV each)
  int short_requests = 30;      // 4K-context requests (512 MiB each)
  double window_ms = 2000;      // arrivals uniform at random over this window: ~66% offered load
  double stall_us = 200;        // stall target per layer declared by every request
  double new_fraction = 0.125;  // suffix tokens computed per request, as a fraction of context
  uint64_t seed = 1;
  bool verbose = false;
  std::string workload;  // a file of requests instead of the generated mix
  double cap_bytes = 0;  // with --workload: the cap, bytes/s
};

uint64_t Next(uint64_t& s) {  // splitmix64: deterministic, no <random> distribution drift
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<SimRequest> Workload(const Config& c) {
  ComputeModel model;
  std::vector<SimRequest> rs;
  uint64_t s = c.seed;
  auto add = [&](uint32_t tokens) {
    SimRequest r;
    r.id = rs.size();
    r.arrival = (Next(s) >> 11) * 0x1.0p-53 * c.window_ms / 1e3;
    r.blocks = tokens / kBlockTokens;
    r.layers = kLayers;
    r.block_layer_bytes = kBlockLayerBytes;
    r.compute_per_layer = model.PerLayer(tokens, tokens * c.new_fraction);
    r.stall_target = c.stall_us * 1e-6;
    rs.push_back(r);
  };
  for (int i = 0; i < c.long_requests; ++i) add(65536);
  for (int i = 0; i < c.short_requests; ++i) add(4096);
  return rs;
}

void PrintWorkload(const Config& c) {
  ComputeModel m;
  std::printf(
      "workload: %d x 64K + %d x 4K contexts over %.0f ms, cap %.1f Gbit/s, stall target "
      "%.0f us\n",
      c.long_requests, c.short_requests, c.window_ms, c.cap_gbps, c.stall_us);
  std::printf(
      "per-layer: 4K b=%.1f MiB c=%.2f ms (hide rate %.1f GB/s); 64K b=%.1f MiB "
      "c=%.2f ms (hide rate %.1f GB/s)\n",
      256 * kBlockLayerBytes / 1048576, m.PerLayer(4096, 4096 * c.new_fraction) * 1e3,
      256 * kBlockLayerBytes / m.PerLayer(4096, 4096 * c.new_fraction) / 1e9,
      4096 * kBlockLayerBytes / 1048576, m.PerLayer(65536, 65536 * c.new_fraction) * 1e3,
      4096 * kBlockLayerBytes / m.PerLayer(65536, 65536 * c.new_fraction) / 1e9);
}

struct Summary {
  double mean_short = 0, mean_long = 0, mean_all = 0, p99ish_max = 0;
};

// Reads --workload's requests; false (and a message) on a malformed line.
bool ReadWorkload(const std::string& path, std::vector<SimRequest>* rs) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    SimRequest r;
    r.id = rs->size();
    if (!(ls >> r.arrival >> r.blocks >> r.layers >> r.block_layer_bytes >> r.compute_per_layer >>
          r.stall_target)) {
      std::fprintf(stderr, "%s: malformed line: %s\n", path.c_str(), line.c_str());
      return false;
    }
    rs->push_back(r);
  }
  return true;
}

// "Short" requests are those of the fewest blocks (the 4K contexts), "long" the others.
Summary Summarize(const std::vector<SimRequest>& rs, const std::vector<SimResult>& res) {
  Summary s;
  int ns = 0, nl = 0;
  uint32_t short_blocks = UINT32_MAX;
  for (const SimRequest& r : rs) short_blocks = std::min(short_blocks, r.blocks);
  for (size_t i = 0; i < rs.size(); ++i) {
    double a = res[i].added_ttft;
    const bool is_short = rs[i].blocks == short_blocks;
    (is_short ? s.mean_short : s.mean_long) += a;
    (is_short ? ns : nl)++;
    s.mean_all += a;
    s.p99ish_max = std::max(s.p99ish_max, a);
  }
  if (ns) s.mean_short /= ns;
  if (nl) s.mean_long /= nl;
  if (!rs.empty()) s.mean_all /= rs.size();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> double {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", a.c_str());
        std::exit(2);
      }
      return std::atof(argv[++i]);
    };
    if (a == "--cap-gbps")
      c.cap_gbps = val();
    else if (a == "--long")
      c.long_requests = static_cast<int>(val());
    else if (a == "--short")
      c.short_requests = static_cast<int>(val());
    else if (a == "--window-ms")
      c.window_ms = val();
    else if (a == "--stall-us")
      c.stall_us = val();
    else if (a == "--new-fraction")
      c.new_fraction = val();
    else if (a == "--seed")
      c.seed = static_cast<uint64_t>(val());
    else if (a == "--verbose")
      c.verbose = true;
    else if (a == "--workload" && i + 1 < argc)
      c.workload = argv[++i];
    else if (a == "--cap-bytes")
      c.cap_bytes = val();
    else {
      std::fprintf(stderr,
                   "usage: %s [--cap-gbps G] [--long N] [--short N] [--window-ms W] "
                   "[--stall-us S] [--new-fraction F] [--seed X] [--verbose]\n"
                   "       %s --workload FILE --cap-bytes C [--verbose]\n",
                   argv[0], argv[0]);
      return 2;
    }
  }
  const bool from_file = !c.workload.empty();
  if (from_file && !(c.cap_bytes > 0)) {
    std::fprintf(stderr, "--workload needs --cap-bytes > 0\n");
    return 2;
  }
  const double cap = from_file ? c.cap_bytes : c.cap_gbps * 1e9 / 8;
  std::vector<SimRequest> rs;
  if (from_file) {
    if (!ReadWorkload(c.workload, &rs)) return 2;
    std::printf("workload: %zu requests from %s, cap %.0f bytes/s\n", rs.size(), c.workload.c_str(),
                cap);
  } else {
    rs = Workload(c);
    PrintWorkload(c);
  }
  struct Run {
    const char* name;
    Options o;
  };
  Options eq{.policy = Policy::kEqualShare};
  Options even{.policy = Policy::kStallTarget, .shortfall = Shortfall::kDegradeEvenly};
  Options lsf{.policy = Policy::kStallTarget, .shortfall = Shortfall::kLeastSlackFirst};
  std::vector<Run> runs = {{"equal-share", eq},
                           {"stall-target/degrade-evenly", even},
                           {"stall-target/least-slack-first", lsf}};
  std::vector<Summary> sums;
  std::printf("%-32s %14s %14s %14s %14s\n", "policy", "mean added ms", "4K mean ms", "64K mean ms",
              "max ms");
  for (const Run& run : runs) {
    auto res = Simulate(rs, cap, run.o);
    if (!res.ok()) {
      std::fprintf(stderr, "simulation failed: %s\n", res.status().ToString().c_str());
      return 1;
    }
    Summary s = Summarize(rs, *res);
    sums.push_back(s);
    std::printf("%-32s %14.2f %14.2f %14.2f %14.2f\n", run.name, s.mean_all * 1e3,
                s.mean_short * 1e3, s.mean_long * 1e3, s.p99ish_max * 1e3);
    if (c.verbose)
      for (size_t i = 0; i < rs.size(); ++i)
        std::printf("  req %3zu %5u blocks arrive %7.2f ms first-layer %7.2f ms stall %7.2f ms\n",
                    i, rs[i].blocks, rs[i].arrival * 1e3, (*res)[i].first_layer_wait * 1e3,
                    (*res)[i].stall * 1e3);
  }
  std::printf(
      "ratio equal-share / stall-target (mean added TTFT): least-slack-first (default) "
      "%.2fx, degrade-evenly %.2fx\n",
      sums[0].mean_all / sums[2].mean_all, sums[0].mean_all / sums[1].mean_all);
  if (from_file) return 0;

  // Sensitivity: the same mix at other caps (offered load changes), 5 seeds each.
  std::printf(
      "\nsweep (same mix, 5 seeds each): cap -> mean added TTFT equal / stall-target "
      "(least-slack-first)\n");
  for (double gbps : {100.0, 200.0, 400.0, 800.0}) {
    double eq_sum = 0, st_sum = 0;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      Config k = c;
      k.cap_gbps = gbps;
      k.seed = seed;
      auto w = Workload(k);
      auto a = Simulate(w, gbps * 1e9 / 8, eq);
      auto b = Simulate(w, gbps * 1e9 / 8, lsf);
      if (!a.ok() || !b.ok()) return 1;
      eq_sum += Summarize(w, *a).mean_all;
      st_sum += Summarize(w, *b).mean_all;
    }
    std::printf("  %5.0f Gbit/s: equal %8.2f ms, stall-target %8.2f ms, ratio %.2fx\n", gbps,
                eq_sum / 5 * 1e3, st_sum / 5 * 1e3, eq_sum / st_sum);
  }
  return 0;
}
