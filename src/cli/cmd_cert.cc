// kvcs cert: writes a self-signed development certificate and its private key (PEM) for the
// QUIC server (`--cert/--key`) and for clients to trust (`--ca`). Development only: production
// servers use certificates from a real CA.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "quic/tls.h"

namespace kvcs::cli {
namespace {

constexpr char kCmd[] = "cert";

struct Args {
  std::string out_cert;
  std::string out_key;
  std::string name = "localhost";
  int days = 365;
  bool force = false;
};

int Write(const std::string& path, const std::string& data, bool secret, bool force) {
  if (!force && std::filesystem::exists(path)) {
    return Fail(kCmd, "'" + path + "' already exists", "pass --force to overwrite it");
  }
  // The private key is created readable by its owner only (no window with wider permissions).
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, secret ? 0600 : 0644);
  if (fd < 0) {
    return Fail(kCmd, "cannot write '" + path + "': " + strerror(errno),
                "check that the directory exists and is writable");
  }
  if (secret) fchmod(fd, 0600);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) {
      close(fd);
      return Fail(kCmd, "cannot write '" + path + "': " + strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      kCmd, "Write a self-signed development TLS certificate and key (PEM) for QUIC");
  cmd->add_option("--out-cert", args->out_cert, "certificate output file (PEM)")->required();
  cmd->add_option("--out-key", args->out_key, "private key output file (PEM, mode 0600)")
      ->required();
  cmd->add_option("--name", args->name,
                  "DNS name in the certificate (CN and SAN; 127.0.0.1 and ::1 are always added)")
      ->capture_default_str();
  cmd->add_option("--days", args->days, "validity in days (1..3650)")->capture_default_str();
  cmd->add_flag("--force", args->force, "overwrite existing files");
  cmd->footer(
      "Example:\n"
      "  kvcs cert --out-cert c.pem --out-key k.pem --name localhost\n"
      "  # serve with the pair; clients trust c.pem as their CA file and use server name "
      "'localhost'");
  return [args] {
    auto pem = quic::GenerateSelfSignedCert(args->name, args->days);
    if (!pem.ok()) return Fail(kCmd, pem.status().message());
    if (int rc = Write(args->out_key, pem->key_pem, true, args->force); rc != 0) return rc;
    if (int rc = Write(args->out_cert, pem->cert_pem, false, args->force); rc != 0) return rc;
    std::cout << "wrote certificate " << args->out_cert << " and key " << args->out_key << " for '"
              << args->name << "' (ECDSA P-256, self-signed, " << args->days << " days)\n";
    return 0;
  };
}

}  // namespace
KVCS_REGISTER_COMMAND(cert, 900, Setup);
}  // namespace kvcs::cli
