// kvcs pack: a KV cache in safetensors -> one KVSP container per full block plus index.json
// (docs/formats/safetensors-kv.md). The tail of T mod B tokens is reported, never dropped silently.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kvsp/codec.h"
#include "profile/cose.h"
#include "profile/manifest.h"
#include "tensorio/kv_cache.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "pack";

struct PackArgs {
  std::string input, out, codec = "raw", sign_key;
  bool manifest = false;
  ScopeOptions scope;
};

// The KVCS manifest (profile §3.6) of the packed blocks as one complete segment 0 with the k and v
// tracks of the codec, and every object's Data Digest.
Result<profile::Manifest> BuildManifest(const kvsp::Descriptor& d, const tensorio::PackReport& r,
                                        const std::string& codec) {
  profile::Manifest m;
  m.compat = d;
  m.layers = d.layers;
  m.block_tokens = d.block_tokens;
  m.deterministic = false;
  profile::ManifestSegment s;
  s.segment = 0;
  s.first_block = 0;
  s.blocks = r.blocks;
  s.block_keys_sha256 = profile::BlockKeysSha256(r.block_keys);
  s.complete = true;
  bool mla = d.attn == "mla";
  std::map<std::string, std::vector<std::vector<Digest>>> digests;
  for (int kv = 0; kv < (mla ? 1 : 2); ++kv) {
    std::string name = std::string(kv ? "v." : "k.") + codec + ".s0";
    KVCS_ASSIGN_OR_RETURN(profile::TrackName t, profile::ParseTrackName(name));
    s.tracks.push_back(t);
    auto& groups = digests[name];
    groups.resize(d.layers);
    for (uint32_t l = 0; l < d.layers; ++l) {
      for (uint64_t b = 0; b < r.blocks; ++b) {
        const auto& pair = r.section_digests[b][l];
        groups[l].push_back(kv ? pair.second : pair.first);
      }
    }
  }
  s.object_digests = std::move(digests);
  m.segments.push_back(std::move(s));
  KVCS_RETURN_IF_ERROR(profile::ValidateManifest(m));
  return m;
}

Status WriteBytes(const std::string& path, ByteSpan b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size())) ||
      !out.flush()) {
    return IoError("cannot write " + path);
  }
  return Status::Ok();
}

// In-place progress on a terminal; silent otherwise (logs and tests stay clean).
tensorio::Progress StderrProgress(const char* what) {
  if (!::isatty(2)) return {};
  return [what](uint64_t done, uint64_t total) {
    if (done == total || done % 16 == 0) {
      std::fprintf(stderr, "\r  %s %llu/%llu blocks", what, (unsigned long long)done,
                   (unsigned long long)total);
      if (done == total) std::fprintf(stderr, "\n");
    }
  };
}

int RunPack(const PackArgs& a) {
  auto codec = kvsp::CodecFromName(a.codec);
  if (!codec.ok() || !kvsp::IsImplemented(*codec)) {
    return Fail(kCmd, "codec \"" + a.codec + "\" is not available",
                "use --codec raw, zstd, fp8-e4m3 or int8");
  }
  std::string warning;
  auto scope_key = a.scope.Resolve(&warning);
  if (!scope_key.ok()) {
    return Fail(kCmd, scope_key.status().message(),
                "create a key with: kvcs keygen scope --out tenant.key");
  }
  if (!warning.empty()) std::cerr << "kvcs pack: warning: " << warning << "\n";
  std::optional<profile::SigningKey> signer;
  if (!a.sign_key.empty()) {
    auto kf = LoadKeyFile(a.sign_key);
    if (!kf.ok())
      return Fail(kCmd, kf.status().message(),
                  "--sign-key takes the private key file of kvcs keygen producer");
    auto k = profile::SigningKey::FromPrivatePem(kf->pem, KidBytes(kf->kid));
    if (!k.ok())
      return Fail(kCmd, a.sign_key + ": " + k.status().message(),
                  "--sign-key takes the private key file of kvcs keygen producer");
    signer = *k;
  }
  bool want_manifest = a.manifest || signer.has_value();
  auto file = tensorio::SafetensorsFile::Open(a.input);
  if (!file.ok()) {
    return Fail(kCmd, a.input + ": " + file.status().message(),
                "the input must be a safetensors file (kvcs inspect " + a.input + " says more)");
  }
  auto cache = tensorio::ReadKvCache(file->view());
  if (!cache.ok()) {
    return Fail(kCmd, a.input + ": " + cache.status().message(),
                "see docs/formats/safetensors-kv.md for the tensor names, shapes and metadata");
  }
  auto r = tensorio::PackDirectory(*cache, *scope_key, a.scope.is_public, *codec, a.out,
                                   StderrProgress("packed"), want_manifest);
  if (!r.ok()) {
    return Fail(kCmd, r.status().message(),
                r.status().code() == Code::kAlreadyExists ? "choose an empty --out directory" : "");
  }
  const auto& d = cache->descriptor;
  std::string manifest_line;
  if (want_manifest) {
    auto m = BuildManifest(d, *r, a.codec);
    Result<std::string> json =
        m.ok() ? profile::ManifestToJson(*m) : Result<std::string>(m.status());
    if (!json.ok()) return Fail(kCmd, "manifest: " + json.status().message());
    Status s = WriteBytes(a.out + "/manifest.json", AsBytes(*json));
    if (!s.ok()) return Fail(kCmd, s.message());
    manifest_line = "  manifest    " + a.out + "/manifest.json";
    if (signer) {
      auto cose = profile::SignManifestCose(*m, *signer);
      if (!cose.ok()) return Fail(kCmd, "signing the manifest: " + cose.status().message());
      s = WriteBytes(a.out + "/manifest.cose", *cose);
      if (!s.ok()) return Fail(kCmd, s.message());
      manifest_line += " and manifest.cose (" + std::string(profile::CoseAlgName(signer->alg())) +
                       ", kid " + std::string(AsStringView(signer->kid())) + ")";
    }
    manifest_line += "\n";
  }
  std::cout << "packed " << a.input << " -> " << a.out << "/\n"
            << "  model       " << d.model << " (" << d.layers << " layers, " << d.kv_heads
            << " KV heads, head_dim " << d.head_dim << ", " << d.kv_dtype << ")\n"
            << "  compat_id   " << ToHex(r->compat_id) << "\n"
            << "  scope_id    " << ToHex(r->scope_id) << (a.scope.is_public ? " (public)" : "")
            << "\n"
            << "  blocks      " << r->blocks << " x " << d.block_tokens << " tokens, codec "
            << a.codec << ", " << r->container_bytes << " bytes in containers (" << r->raw_bytes
            << " bytes of K/V)\n"
            << "  anchor      " << ToHex(r->block_keys.back()) << "\n"
            << "  index       " << a.out << "/index.json\n"
            << manifest_line;
  if (r->tail_tokens > 0) {
    std::cout << "  tail        " << r->tail_tokens << " of " << r->tokens
              << " tokens NOT packed: a partial block has no Block Key and is recomputed\n";
  } else {
    std::cout << "  tail        none (all " << r->tokens << " tokens packed)\n";
  }
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("pack", "Cut a safetensors KV cache into KVSP containers");
  auto a = std::make_shared<PackArgs>();
  cmd->add_option("cache", a->input, "KV cache (safetensors, docs/formats/safetensors-kv.md)")
      ->required();
  cmd->add_option("--out", a->out, "directory for <block_key>.kvsp files and index.json")
      ->required();
  cmd->add_option("--codec", a->codec, "raw, zstd, fp8-e4m3 or int8")->capture_default_str();
  cmd->add_flag("--manifest", a->manifest,
                "also write manifest.json (KVCS profile §3.6: one segment, k/v tracks, digests)");
  cmd->add_option("--sign-key", a->sign_key,
                  "also write manifest.cose signed with this producer key (kvcs keygen producer)");
  a->scope.Add(cmd);
  cmd->footer(
      "One container per FULL block (all layers); a partial tail block is reported, not packed.\n\n"
      "Example:\n"
      "  kvcs pack cache.safetensors --out packed/ --codec zstd --public\n"
      "  kvcs pack cache.safetensors --out packed/ --scope-key-file tenant.key \\\n"
      "      --sign-key producer.pem");
  return [a] { return RunPack(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(pack, 30, Setup);
}  // namespace kvcs::cli
