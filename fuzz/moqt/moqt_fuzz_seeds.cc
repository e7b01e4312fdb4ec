// Writes the MOQT fuzz seed corpora from the codec's vector table:
//   moqt_fuzz_seeds <repo-root>  ->
//   <repo-root>/fuzz/corpus/moqt_{control,data_stream,datagram}_fuzzer/
// Each seed is one configuration byte (0) followed by one vector's wire bytes (datagram seeds
// have no configuration byte). Malformed vectors are included: they seed the error paths.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "moqt/test_tools/moqt_test_vectors.h"

namespace fs = std::filesystem;
using namespace kvcs;
using namespace kvcs::moqt::test;

namespace {

void Write(const fs::path& dir, const std::string& name, uint8_t config, bool with_config,
           const std::string& hex) {
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary);
  if (with_config) f.put(static_cast<char>(config));
  Bytes b = HexBytes(hex);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <repo-root>\n", argv[0]);
    return 2;
  }
  fs::path corpus = fs::path(argv[1]) / "fuzz" / "corpus";
  fs::path control = corpus / "moqt_control_fuzzer";
  fs::path data = corpus / "moqt_data_stream_fuzzer";
  fs::path dgram = corpus / "moqt_datagram_fuzzer";
  for (const auto& v : ControlVectors()) Write(control, v.name, 0, true, v.hex);
  for (const auto& v : MalformedControlVectors()) Write(control, v.name, 0, true, v.hex);
  for (const auto& v : DataStreamVectors()) {
    uint8_t config = 0x08 | (v.order == kvcs::moqt::GroupOrder::kDescending ? 0x01 : 0);
    Write(data, v.name, config, true, v.hex);
  }
  for (const auto& v : MalformedDataStreamVectors()) {
    uint8_t config = (v.fin ? 0x08 : 0) | (v.order == kvcs::moqt::GroupOrder::kDescending ? 1 : 0);
    Write(data, v.name, config, true, v.hex);
  }
  for (const auto& v : DatagramVectors()) Write(dgram, v.name, 0, false, v.hex);
  for (const auto& v : MalformedDatagramVectors()) Write(dgram, v.name, 0, false, v.hex);
  return 0;
}
