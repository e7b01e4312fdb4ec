// A fresh self-signed development certificate for "localhost", written with its key (mode 600)
// into a private temp dir: what `kvcs moq-pub` and `kvcs publish` serve with when no --cert and
// --key are given. Clients pass --ca <cert> or --insecure.
#ifndef KVCS_CLI_DEV_CERT_H_
#define KVCS_CLI_DEV_CERT_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/status.h"
#include "quic/tls.h"

namespace kvcs::cli {

struct DevCertFiles {
  std::string cert, key;
};

// `dir_prefix`: the temp dir's name before its random suffix (e.g. "kvcs-publish").
inline Result<DevCertFiles> WriteDevCertificate(const std::string& dir_prefix) {
  auto pem = quic::GenerateSelfSignedCert("localhost");
  if (!pem.ok()) return pem.status().WithContext("dev certificate");
  std::string dir = (std::filesystem::temp_directory_path() / (dir_prefix + "-XXXXXX")).string();
  if (!mkdtemp(dir.data())) return IoError("cannot create a temp dir for the dev certificate");
  DevCertFiles f{dir + "/cert.pem", dir + "/key.pem"};
  std::ofstream(f.cert) << pem->cert_pem;
  std::ofstream(f.key) << pem->key_pem;
  std::filesystem::permissions(
      f.key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return f;
}

}  // namespace kvcs::cli

#endif  // KVCS_CLI_DEV_CERT_H_
