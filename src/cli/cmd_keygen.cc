// kvcs keygen: new secrets. `scope` writes a tenant scope key (32 random bytes, hex, mode 0600);
// `producer` writes a producer signing key pair for COSE_Sign1 manifests (ES256 or EdDSA).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "common/crypto.h"
#include "common/hex.h"
#include "profile/cose.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "keygen";

// Default kid: 16 hex characters of SHA-256 of the public key PEM (ProducerKid in cli_util.h).
std::string DefaultKid(const std::string& public_pem) { return ProducerKid(public_pem); }

// Creates `path` with mode `mode` (refusing to overwrite unless `force`) and writes `text`.
Status WriteNewFile(const std::string& path, std::string_view text, mode_t mode, bool force) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) {
    int err = errno;
    if (err == EEXIST) return Status(Code::kAlreadyExists, path + " already exists");
    return IoError("cannot create " + path + ": " + std::strerror(err));
  }
  // O_CREAT's mode is filtered by the umask and ignored for an existing file: set it exactly.
  bool ok = ::fchmod(fd, mode) == 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += size_t(n);
  }
  ok = (::close(fd) == 0) && ok;
  if (!ok) return IoError("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

struct KeygenArgs {
  std::string out, out_key, out_pub, alg = "es256", kid;
  bool force = false;
};

int RunScope(const KeygenArgs& a) {
  uint8_t key[32];
  RandomBytes(key, sizeof key);
  std::string text = ToHex(ByteSpan(key, sizeof key)) + "\n";
  Status s = WriteNewFile(a.out, text, 0600, a.force);
  std::memset(key, 0, sizeof key);
  std::fill(text.begin(), text.end(), '\0');
  if (!s.ok()) {
    return Fail(kCmd, s.message(),
                s.code() == Code::kAlreadyExists
                    ? "pick another --out or pass --force to replace it"
                    : "check that the directory exists and is writable");
  }
  auto scope_key = ReadSmallFile(a.out, kMaxScopeKeyFileBytes);
  auto k = scope_key.ok() ? ParseScopeKey(*scope_key) : Result<kvsp::ScopeKey>(scope_key.status());
  if (!k.ok()) return Fail(kCmd, "cannot read back " + a.out + ": " + k.status().message());
  std::cout << "wrote scope key to " << a.out << " (mode 0600)\n"
            << "scope_id " << ToHex(kvsp::ScopeId(*k)) << "\n"
            << "Keep the file secret: anyone holding it can compute and probe this scope's keys.\n";
  return 0;
}

int RunProducer(const KeygenArgs& a) {
  profile::CoseAlg alg;
  if (a.alg == "es256" || a.alg == "ES256") {
    alg = profile::CoseAlg::kES256;
  } else if (a.alg == "eddsa" || a.alg == "EdDSA" || a.alg == "ed25519") {
    alg = profile::CoseAlg::kEdDSA;
  } else {
    return Fail(kCmd, "unknown algorithm \"" + a.alg + "\"", "use --alg es256 or --alg eddsa");
  }
  if (a.kid.size() > profile::kMaxKidSize) {
    return Fail(kCmd, "--kid is longer than " + std::to_string(profile::kMaxKidSize) + " bytes");
  }
  // Generate with a placeholder kid; the default kid is derived from the public key.
  auto key = profile::SigningKey::Generate(alg, Bytes{'k'});
  if (!key.ok()) return Fail(kCmd, "key generation failed: " + key.status().message());
  std::string pub = key->PublicPem();
  std::string kid = a.kid.empty() ? DefaultKid(pub) : a.kid;
  // The kid travels with the public key: a "kid:" line before the PEM block (PEM readers skip
  // text before BEGIN). kvcs inspect --pub reads it.
  std::string pub_file = "kid: " + kid + "\n" + pub;
  std::string priv_file = "kid: " + kid + "\n" + key->PrivatePem();
  Status s = WriteNewFile(a.out_key, priv_file, 0600, a.force);
  std::fill(priv_file.begin(), priv_file.end(), '\0');
  if (!s.ok()) {
    return Fail(kCmd, s.message(),
                s.code() == Code::kAlreadyExists
                    ? "pick another --out-key or pass --force"
                    : "check that the directory exists and is writable");
  }
  s = WriteNewFile(a.out_pub, pub_file, 0644, a.force);
  if (!s.ok()) {
    return Fail(kCmd, s.message(),
                s.code() == Code::kAlreadyExists
                    ? "pick another --out-pub or pass --force"
                    : "check that the directory exists and is writable");
  }
  std::cout << "wrote " << profile::CoseAlgName(alg) << " producer key to " << a.out_key
            << " (mode 0600) and public key to " << a.out_pub << "\n"
            << "kid " << kid << "\n"
            << "Sign manifest.cose with the private key; give the public key file to the scope's "
               "members (kvcs inspect manifest.cose --pub "
            << a.out_pub << ").\n";
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("keygen", "Create a scope key or a producer signing key pair");
  cmd->require_subcommand(1);
  auto a = std::make_shared<KeygenArgs>();
  auto* scope = cmd->add_subcommand("scope", "32 random bytes in hex, written with mode 0600");
  scope->add_option("--out", a->out, "file to create")->required();
  scope->add_flag("--force", a->force, "replace an existing file");
  scope->footer("Example:\n  kvcs keygen scope --out tenant.key");
  auto* prod = cmd->add_subcommand("producer", "COSE_Sign1 producer key pair (PEM)");
  prod->add_option("--alg", a->alg, "es256 (P-256) or eddsa (Ed25519)")->capture_default_str();
  prod->add_option("--out-key", a->out_key, "private key file to create (PKCS#8 PEM, mode 0600)")
      ->required();
  prod->add_option("--out-pub", a->out_pub, "public key file to create (SPKI PEM)")->required();
  prod->add_option("--kid", a->kid, "key identifier for the COSE kid header (default: derived)");
  prod->add_flag("--force", a->force, "replace existing files");
  prod->footer(
      "Example:\n  kvcs keygen producer --alg eddsa --out-key producer.pem --out-pub "
      "producer.pub.pem");
  cmd->footer(
      "Example:\n"
      "  kvcs keygen scope --out tenant.key\n"
      "  kvcs keygen producer --alg es256 --out-key producer.pem --out-pub producer.pub.pem");
  return [a, scope, prod] {
    if (scope->parsed()) return RunScope(*a);
    if (prod->parsed()) return RunProducer(*a);
    return Fail(kCmd, "choose what to create", "kvcs keygen scope ... or kvcs keygen producer ...");
  };
}

}  // namespace
KVCS_REGISTER_COMMAND(keygen, 20, Setup);
}  // namespace kvcs::cli
