// kvcs inspect: detects what a file is (KVSP container, KVCS object payload, manifest JSON,
// COSE_Sign1 manifest, safetensors KV cache, packed-directory index, descriptor), decodes and
// verifies it, and prints a structured summary; for a bad file it says exactly which check failed
// and exits non-zero.
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "profile/cbor.h"
#include "profile/cose.h"
#include "profile/manifest.h"
#include "profile/object.h"
#include "profile/track_name.h"
#include "tensorio/kv_cache.h"
#include "tensorio/safetensors.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "inspect";

enum class Kind { kContainer, kObject, kManifest, kCose, kSafetensors, kPackIndex, kDescriptor };

struct InspectArgs {
  std::string file, type, compat_id, block_key, descriptor, track;
  std::optional<uint64_t> group, object, token_start;
  std::optional<uint32_t> block_index;
  std::vector<std::string> pubs;
};

void Row(const std::string& k, const std::string& v) {
  std::printf("  %-14s %s\n", k.c_str(), v.c_str());
}

// "INVALID <what>: <message> [check]" and a hint; exit 1.
int Invalid(const std::string& file, const std::string& what, const Status& s,
            std::string_view check, const std::string& hint = "") {
  std::string msg = file + ": INVALID " + what + ": " + s.message();
  if (!check.empty() && check != "none" && check != "unknown")
    msg += " [" + std::string(check) + "]";
  return Fail(kCmd, msg, hint);
}

Result<Digest> ParseHexOpt(const std::string& hex, const char* flag) {
  auto d = FromHexFixed<32>(hex);
  if (!d.ok()) return InvalidArgument(std::string(flag) + ": " + d.status().message());
  return *d;
}

std::optional<Kind> KindFromName(const std::string& t) {
  if (t == "container") return Kind::kContainer;
  if (t == "object") return Kind::kObject;
  if (t == "manifest") return Kind::kManifest;
  if (t == "cose" || t == "manifest.cose") return Kind::kCose;
  if (t == "safetensors") return Kind::kSafetensors;
  if (t == "index") return Kind::kPackIndex;
  if (t == "descriptor") return Kind::kDescriptor;
  return std::nullopt;
}

// Detects the format from the first bytes. JSON kinds are told apart by their members.
std::optional<Kind> Detect(ByteSpan head, const std::string& text_prefix) {
  if (head.size() >= 4 && std::memcmp(head.data(), kvsp::kContainerMagic, 4) == 0) {
    return Kind::kContainer;
  }
  if (head.size() >= 4 && LoadBe32(head.data()) == profile::kObjectMagic) return Kind::kObject;
  size_t i = 0;
  while (i < head.size() && std::isspace(head[i])) ++i;
  if (i < head.size() && head[i] == '{') {
    if (text_prefix.find("\"kvcs_pack\"") != std::string::npos) return Kind::kPackIndex;
    if (text_prefix.find("\"kvcs\"") != std::string::npos) return Kind::kManifest;
    if (text_prefix.find("\"kvsp\"") != std::string::npos) return Kind::kDescriptor;
    return Kind::kManifest;  // the most likely JSON; its parser says what is missing
  }
  // COSE_Sign1: tag 18 (0xD2) or an untagged 4-element array (0x84).
  if (!head.empty() && (head[0] == 0xD2 || head[0] == 0x84)) return Kind::kCose;
  // safetensors: u64 LE header length, then '{'.
  if (head.size() >= 9 && head[8] == '{') return Kind::kSafetensors;
  return std::nullopt;
}

int InspectContainer(const InspectArgs& a, ByteSpan bytes) {
  auto v = kvsp::DecodeContainer(bytes);
  auto name = [](const Status& s) {
    return kvsp::ContainerErrorName(kvsp::ContainerError(s.detail()));
  };
  if (!v.ok()) {
    return Invalid(a.file, "KVSP container", v.status(), name(v.status()),
                   "the container is damaged; fetch or pack the block again");
  }
  const auto& h = v->header;
  kvsp::ContainerExpectation want;
  want.compat_id = h.compat_id;
  want.block_key = h.block_key;
  want.block_index = h.block_index;
  want.block_tokens = h.block_tokens;
  want.codec = h.codec;
  want.layer_first = h.layer_first;
  want.layer_count = h.layer_count;
  std::optional<kvsp::Descriptor> d;
  if (!a.descriptor.empty()) {
    auto dd = LoadDescriptor(a.descriptor);
    if (!dd.ok()) return Fail(kCmd, dd.status().message());
    d = *dd;
    want = kvsp::ExpectFor(*d, kvsp::CompatId(*d), h.block_key, h.block_index, h.codec,
                           h.layer_first, h.layer_count);
  }
  if (!a.compat_id.empty()) {
    auto c = ParseHexOpt(a.compat_id, "--compat-id");
    if (!c.ok()) return Fail(kCmd, c.status().message());
    want.compat_id = *c;
  }
  if (!a.block_key.empty()) {
    auto k = ParseHexOpt(a.block_key, "--block-key");
    if (!k.ok()) return Fail(kCmd, k.status().message());
    want.block_key = *k;
  }
  if (a.block_index) want.block_index = *a.block_index;
  Status s = kvsp::CheckExpectation(*v, want);
  if (!s.ok()) {
    return Invalid(a.file, "KVSP container", s, name(s),
                   "the container is intact but not the block you asked for");
  }
  uint64_t section_bytes = 0;
  for (auto& l : v->layers) section_bytes += l.k_len + l.v_len;
  std::printf("%s: KVSP container v1 (KVSP v1 as defined by the project)\n", a.file.c_str());
  Row("codec", std::string(kvsp::CodecName(h.codec)));
  Row("compat_id", ToHex(h.compat_id) + (d || !a.compat_id.empty() ? " (as expected)" : ""));
  Row("block_key", ToHex(h.block_key) + (!a.block_key.empty() ? " (as expected)" : ""));
  Row("block", std::to_string(h.block_index) + " (" + std::to_string(h.block_tokens) + " tokens)");
  Row("layers", std::to_string(h.layer_first) + ".." +
                    std::to_string(h.layer_first + h.layer_count - 1) + " (" +
                    std::to_string(h.layer_count) + ")");
  Row("size", std::to_string(v->total_size) + " bytes (header+table " +
                  std::to_string(v->payload_offset) + ", sections " +
                  std::to_string(section_bytes) + ")");
  Row("digests", "all " + std::to_string(v->layers.size()) + " layer digests verified");
  if (d) {
    // Decode every section too: the codec's own checks (frame, scales, sizes).
    auto ks = kvsp::KShape(*d), vs = kvsp::VShape(*d);
    for (auto& l : v->layers) {
      auto sec = kvsp::LayerBytes(*v, bytes, l.layer);
      Status ds = sec.ok() ? kvsp::DecodeSection(h.codec, ks, sec->k).status() : sec.status();
      if (ds.ok()) ds = kvsp::DecodeSection(h.codec, vs, sec->v).status();
      if (!ds.ok()) {
        return Invalid(a.file, "KVSP container", ds.WithContext("layer " + std::to_string(l.layer)),
                       "");
      }
    }
    Row("sections", "decoded as " + d->kv_dtype + " [" + std::to_string(ks.tokens) + "][" +
                        std::to_string(ks.heads) + "][" + std::to_string(ks.head_dim) + "]: ok");
  } else {
    Row("note", "pass --descriptor to check section shapes and decode them");
  }
  return 0;
}

int InspectObject(const InspectArgs& a, ByteSpan bytes) {
  auto name = [](const Status& s) {
    return profile::ObjectErrorName(profile::ObjectError(s.detail()));
  };
  Result<profile::ObjectView> v = profile::InspectObject(bytes);
  bool located = a.group.has_value() || a.object.has_value();
  if (v.ok() && (located || !a.track.empty() || a.token_start)) {
    profile::ObjectExpectation e;
    e.group_id = a.group.value_or(v->header.layer);
    e.object_id = a.object.value_or(v->header.block_index);
    if (!a.track.empty()) {
      auto t = profile::ParseTrackName(a.track);
      if (!t.ok() || !t->is_data()) {
        return Fail(kCmd, "--track " + a.track + " is not a data track name",
                    "data tracks look like k.raw.s0, v.zstd.s1, kv.int8.s0");
      }
      e.component = t->component;
      auto c = kvsp::CodecFromName(t->codec);
      if (c.ok()) e.codec = kvsp::CodecValue(*c);
    }
    e.token_start = a.token_start;
    v = profile::DecodeObject(bytes, e);
  }
  if (!v.ok()) {
    return Invalid(a.file, "KVCS object payload", v.status(), name(v.status()),
                   "an End Subscriber MUST discard this object and treat it as missing");
  }
  const auto& h = v->header;
  std::printf("%s: KVCS object payload (KVCS profile §3.5)\n", a.file.c_str());
  Row("component", std::string(profile::ComponentName(h.component)));
  auto codec = kvsp::CodecFromValue(h.codec);
  Row("codec", (codec.ok() ? std::string(kvsp::CodecName(*codec)) : "?") + " (0x" +
                   ToHex(Bytes{uint8_t(h.codec >> 8), uint8_t(h.codec)}) + ")");
  Row("layer", std::to_string(h.layer) + (a.group ? " (= group, checked)" : ""));
  Row("block_index", std::to_string(h.block_index) + (a.object ? " (= object, checked)" : ""));
  Row("tokens", std::to_string(h.token_start) + ".." +
                    std::to_string(h.token_start + h.token_count) + " (" +
                    std::to_string(h.token_count) + ")");
  Row("data", std::to_string(h.data_length) + " bytes, SHA-256 verified");
  Row("data_digest", ToHex(h.data_digest));
  if (h.has_unknown_flags()) Row("warning", "flags are not zero (ignored, as the profile says)");
  if (!located) Row("note", "pass --group and --object to check Layer and Block Index");
  return 0;
}

void PrintManifest(const profile::Manifest& m) {
  Row("model", m.compat.model + " @ " + m.compat.model_rev);
  Row("compat_id", ToHex(kvsp::CompatId(m.compat)) + " (computed from \"compat\")");
  Row("layers", std::to_string(m.layers) + ", block_tokens " + std::to_string(m.block_tokens));
  Row("deterministic", m.deterministic ? "true" : "false");
  uint64_t blocks = 0;
  for (auto& s : m.segments) {
    blocks += s.blocks;
    std::string tracks;
    for (auto& t : s.tracks) tracks += (tracks.empty() ? "" : " ") + profile::FormatTrackName(t);
    std::string digests = "no object_digests";
    if (s.object_digests) {
      size_t groups = 0;
      for (auto& [_, g] : *s.object_digests) groups = std::max(groups, g.size());
      digests = "object_digests for " + std::to_string(groups) + " layers";
    }
    Row("segment " + std::to_string(s.segment), "blocks " + std::to_string(s.first_block) + ".." +
                                                    std::to_string(s.first_block + s.blocks - 1) +
                                                    (s.complete ? " complete" : " in production") +
                                                    ", tracks " + tracks + ", " + digests);
  }
  Row("total", std::to_string(m.segments.size()) + " segments, " + std::to_string(blocks) +
                   " blocks = " + std::to_string(blocks * m.block_tokens) + " tokens");
}

Status CheckCompatOption(const InspectArgs& a, const profile::Manifest& m) {
  if (a.compat_id.empty()) return Status::Ok();
  KVCS_ASSIGN_OR_RETURN(Digest want, ParseHexOpt(a.compat_id, "--compat-id"));
  if (kvsp::CompatId(m.compat) != want) {
    return Status(Code::kCorruption,
                  "the compat_id of \"compat\" is " + ToHex(kvsp::CompatId(m.compat)) +
                      ", not the namespace's " + a.compat_id + ": discard the publication",
                  int(profile::ManifestError::kCompatIdMismatch));
  }
  return Status::Ok();
}

int InspectManifest(const InspectArgs& a, ByteSpan bytes) {
  auto name = [](const Status& s) {
    return profile::ManifestErrorName(profile::ManifestError(s.detail()));
  };
  auto m = profile::ParseManifest(AsStringView(bytes));
  if (!m.ok()) return Invalid(a.file, "KVCS manifest", m.status(), name(m.status()));
  Status s = CheckCompatOption(a, *m);
  if (!s.ok()) return Invalid(a.file, "KVCS manifest", s, name(s));
  std::printf("%s: KVCS manifest JSON (KVCS profile §3.6), valid\n", a.file.c_str());
  PrintManifest(*m);
  if (a.compat_id.empty()) Row("note", "pass --compat-id (the namespace's) to check consistency");
  return 0;
}

int InspectCose(const InspectArgs& a, ByteSpan bytes) {
  auto name = [](const Status& s) -> std::string_view {
    if (s.detail() >= 100) return profile::CoseErrorName(profile::CoseError(s.detail()));
    return profile::cbor::CborErrorName(profile::cbor::CborError(s.detail()));
  };
  auto c = profile::DecodeCoseSign1(bytes);
  if (!c.ok()) return Invalid(a.file, "COSE_Sign1 manifest", c.status(), name(c.status()));
  std::string kid(AsStringView(c->kid));
  bool verified = false;
  if (!a.pubs.empty()) {
    profile::KeySet keys;
    for (auto& p : a.pubs) {
      auto f = LoadKeyFile(p);
      if (!f.ok())
        return Fail(kCmd, f.status().message(), "--pub takes a file from kvcs keygen producer");
      auto k = profile::VerifyKey::FromPublicPem(f->pem, KidBytes(f->kid));
      if (!k.ok()) return Fail(kCmd, p + ": " + k.status().message());
      Status s = keys.Add(*k);
      if (!s.ok()) return Fail(kCmd, p + ": " + s.message());
    }
    auto v = profile::VerifyCoseSign1(bytes, keys);
    if (!v.ok()) {
      return Invalid(a.file, "COSE_Sign1 manifest", v.status(), name(v.status()),
                     "do not use this publication: its manifest is not signed by a known producer");
    }
    verified = true;
  }
  auto m = profile::ParseManifest(AsStringView(c->payload));
  auto mname = [](const Status& s) {
    return profile::ManifestErrorName(profile::ManifestError(s.detail()));
  };
  if (!m.ok()) return Invalid(a.file, "manifest inside COSE_Sign1", m.status(), mname(m.status()));
  Status s = CheckCompatOption(a, *m);
  if (!s.ok()) return Invalid(a.file, "manifest inside COSE_Sign1", s, mname(s));
  std::printf("%s: COSE_Sign1 manifest (manifest.cose, KVCS profile §3.6)\n", a.file.c_str());
  Row("alg", std::string(profile::CoseAlgName(c->alg)));
  Row("kid", kid);
  Row("signature", verified ? "VERIFIED with the given producer key(s)"
                            : "NOT verified: pass --pub producer.pub.pem to verify");
  PrintManifest(*m);
  return 0;
}

int InspectSafetensors(const InspectArgs& a) {
  auto f = tensorio::SafetensorsFile::Open(a.file);
  auto sname = [](const Status& s) {
    return tensorio::SafetensorsErrorName(tensorio::SafetensorsError(s.detail()));
  };
  if (!f.ok()) return Invalid(a.file, "safetensors file", f.status(), sname(f.status()));
  const auto& h = f->header();
  bool claims_kv = h.metadata.count(std::string(tensorio::kDescriptorMetadataKey)) > 0;
  auto kv = tensorio::ReadKvCache(f->view());
  if (!kv.ok() && claims_kv) {
    return Invalid(a.file, "safetensors KV cache", kv.status(),
                   tensorio::KvCacheErrorName(tensorio::KvCacheError(kv.status().detail())),
                   "see docs/formats/safetensors-kv.md for the tensor names, shapes and dtypes");
  }
  std::printf("%s: safetensors, %zu tensors, %llu data bytes, header %llu bytes\n", a.file.c_str(),
              h.tensors.size(), (unsigned long long)h.data_size,
              (unsigned long long)(h.data_start - 8));
  if (!kv.ok()) {
    Row("kv cache", "no: " + kv.status().message());
    return 0;
  }
  const auto& d = kv->descriptor;
  Row("kv cache", "yes (docs/formats/safetensors-kv.md)");
  Row("model", d.model + " @ " + d.model_rev);
  Row("shape", std::to_string(d.layers) + " layers, " + std::to_string(d.kv_heads) +
                   " KV heads, head_dim " + std::to_string(d.head_dim) + ", " + d.kv_dtype +
                   ", attn " + d.attn);
  Row("compat_id", ToHex(kvsp::CompatId(d)));
  Row("tokens", std::to_string(kv->tokens()) + " = " + std::to_string(kv->full_blocks()) +
                    " full blocks of " + std::to_string(d.block_tokens) + " + " +
                    std::to_string(kv->tail_tokens()) + " tail tokens (not keyed)");
  if (kv->tokens() > 0) {
    Row("token_ids",
        std::to_string(kv->token_ids.front()) + " ... " + std::to_string(kv->token_ids.back()));
  }
  return 0;
}

int InspectIndex(const InspectArgs& a, ByteSpan bytes) {
  auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("blocks") || !j["blocks"].is_array()) {
    return Invalid(a.file, "packed-directory index",
                   InvalidArgument("not an index.json of kvcs pack"), "");
  }
  std::printf("%s: packed-directory index (docs/formats/safetensors-kv.md §4)\n", a.file.c_str());
  for (const char* k : {"compat_id", "scope", "scope_id", "codec", "anchor"}) {
    if (j.contains(k) && j[k].is_string()) Row(k, j[k].get<std::string>());
  }
  Row("blocks", std::to_string(j["blocks"].size()));
  if (j.contains("tail_tokens")) Row("tail_tokens", j["tail_tokens"].dump());
  Row("note", "kvcs unpack DIR --out x.safetensors verifies every container");
  return 0;
}

int InspectDescriptor(const InspectArgs& a, ByteSpan bytes) {
  auto d = kvsp::ParseDescriptor(AsStringView(bytes));
  if (!d.ok()) {
    return Invalid(a.file, "KVSP descriptor", d.status(),
                   kvsp::DescriptorErrorName(kvsp::DescriptorError(d.status().detail())));
  }
  std::printf("%s: KVSP Compatibility Descriptor, valid\n", a.file.c_str());
  Row("canonical", kvsp::CanonicalJson(*d));
  Row("compat_id", ToHex(kvsp::CompatId(*d)));
  Row("section", std::to_string(kvsp::KSectionBytes(*d)) + " bytes per K section (B·H·D·dtype)");
  return 0;
}

// Containers, objects, manifests and COSE are bounded by their own formats; this is the largest.
constexpr uint64_t kMaxInspectBytes = profile::kMaxObjectPayloadSize;

int RunInspect(const InspectArgs& a_in) {
  InspectArgs a = a_in;
  struct stat st {};
  if (::stat(a.file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::string index = a.file + "/" + std::string(tensorio::kIndexFileName);
    if (::stat(index.c_str(), &st) != 0) {
      return Fail(kCmd, a.file + " is a directory without an index.json",
                  "inspect a file, or a directory written by kvcs pack");
    }
    a.file = index;  // a packed directory: summarize its index
  }
  std::FILE* f = std::fopen(a.file.c_str(), "rb");
  if (!f)
    return Fail(kCmd, "cannot open " + a.file + ": " + std::strerror(errno), "check the path");
  uint8_t head[64];
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  std::optional<Kind> kind;
  if (!a.type.empty()) {
    kind = KindFromName(a.type);
    if (!kind) {
      return Fail(kCmd, "unknown --type " + a.type,
                  "types: container, object, manifest, cose, safetensors, index, descriptor");
    }
  } else {
    std::string text_prefix;
    if (n > 0 && head[0] != 0xD2 && head[0] != 0x84) {
      auto t = ReadSmallFile(a.file, profile::kMaxManifestBytes);
      if (t.ok()) text_prefix = t->substr(0, 4096);
    }
    kind = Detect(ByteSpan(head, n), text_prefix);
  }
  if (!kind) {
    return Fail(
        kCmd,
        a.file + ": not a format kvcs knows (" + std::to_string(n) +
            (n ? " bytes start with " + ToHex(ByteSpan(head, std::min<size_t>(n, 8))) : " bytes") +
            ")",
        "kvcs inspect reads KVSP containers, KVCS object payloads, manifests (JSON or "
        "COSE_Sign1), safetensors KV caches; force one with --type");
  }
  if (*kind == Kind::kSafetensors) return InspectSafetensors(a);
  uint64_t max = *kind == Kind::kManifest    ? profile::kMaxManifestBytes
                 : *kind == Kind::kCose      ? profile::kMaxCoseSize
                 : *kind == Kind::kContainer ? kvsp::kMaxContainerBytes
                                             : kMaxInspectBytes;
  auto bytes = ReadSmallFile(a.file, max);
  if (!bytes.ok()) return Fail(kCmd, bytes.status().message());
  ByteSpan b = AsBytes(*bytes);
  switch (*kind) {
    case Kind::kContainer:
      return InspectContainer(a, b);
    case Kind::kObject:
      return InspectObject(a, b);
    case Kind::kManifest:
      return InspectManifest(a, b);
    case Kind::kCose:
      return InspectCose(a, b);
    case Kind::kPackIndex:
      return InspectIndex(a, b);
    case Kind::kDescriptor:
      return InspectDescriptor(a, b);
    case Kind::kSafetensors:
      break;
  }
  return 2;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect", "Decode and verify a container, object payload, manifest or safetensors KV cache");
  auto a = std::make_shared<InspectArgs>();
  cmd->add_option("file", a->file, "file to inspect (format detected from its bytes)")->required();
  cmd->add_option("--type", a->type,
                  "force the format: container, object, manifest, cose, safetensors, index, "
                  "descriptor");
  cmd->add_option("--compat-id", a->compat_id,
                  "expected compat_id (container; manifest: the namespace's)");
  cmd->add_option("--block-key", a->block_key, "expected block key (container)");
  cmd->add_option("--block-index", a->block_index, "expected 1-based block index (container)");
  cmd->add_option("--descriptor", a->descriptor,
                  "descriptor JSON: container section shapes are checked and decoded");
  cmd->add_option("--group", a->group, "object payload: the MOQT Group ID (must equal Layer)");
  cmd->add_option("--object", a->object,
                  "object payload: the MOQT Object ID (must equal Block Index)");
  cmd->add_option("--track", a->track, "object payload: its track name (checks component, codec)");
  cmd->add_option("--token-start", a->token_start, "object payload: expected Token Start");
  cmd->add_option("--pub", a->pubs,
                  "producer public key (kvcs keygen producer) to verify a "
                  "COSE_Sign1 manifest; repeatable");
  cmd->footer(
      "Exit status 0: the file is valid (and matches every expectation given); 1: it is not,\n"
      "and the message names the failed check.\n\n"
      "Example:\n"
      "  kvcs inspect packed/2c78...deb.kvsp --descriptor llama8b.json\n"
      "  kvcs inspect obj.bin --group 3 --object 0 --track k.raw.s0\n"
      "  kvcs inspect manifest.cose --pub producer.pub.pem\n"
      "  kvcs inspect cache.safetensors");
  return [a] { return RunInspect(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(inspect, 50, Setup);
}  // namespace kvcs::cli
