#include "s3client/store_factory.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvcs::s3client {

Status ParseBackendConfig(std::string_view text, BackendConfig* c) {
  if (text.size() > kMaxBackendConfigBytes) return InvalidArgument("backend config over 64 KiB");
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("backend config is not a JSON object");
  }
  auto str = [&](const char* name, std::string* out) -> Status {
    const auto& v = j[name];
    if (!v.is_string())
      return InvalidArgument(std::string("backend config: ") + name + " must be a string");
    *out = v.get<std::string>();
    return Status::Ok();
  };
  auto num = [&](const char* name, int64_t lo, int64_t hi, int64_t* out) -> Status {
    const auto& v = j[name];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      return InvalidArgument(std::string("backend config: ") + name + " must be an integer in [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    *out = v.get<int64_t>();
    return Status::Ok();
  };
  for (const auto& [key, value] : j.items()) {
    int64_t n = 0;
    (void)value;
    if (key == "backend") {
      KVCS_RETURN_IF_ERROR(str("backend", &c->backend));
      if (c->backend != "local" && c->backend != "s3") {
        return InvalidArgument("backend config: backend must be \"local\" or \"s3\"");
      }
    } else if (key == "endpoint") {
      KVCS_RETURN_IF_ERROR(str("endpoint", &c->s3.client.endpoint));
    } else if (key == "access_key") {
      KVCS_RETURN_IF_ERROR(str("access_key", &c->s3.client.credentials.access_key));
    } else if (key == "secret_key") {
      KVCS_RETURN_IF_ERROR(str("secret_key", &c->s3.client.credentials.secret_key));
    } else if (key == "ca_file") {
      KVCS_RETURN_IF_ERROR(str("ca_file", &c->s3.client.ca_file));
    } else if (key == "insecure") {
      if (!value.is_boolean()) return InvalidArgument("backend config: insecure must be a boolean");
      c->s3.client.insecure = value.get<bool>();
    } else if (key == "conditional_writes") {
      if (!value.is_boolean()) {
        return InvalidArgument("backend config: conditional_writes must be a boolean");
      }
      c->s3.conditional_writes = value.get<bool>();
    } else if (key == "region") {
      KVCS_RETURN_IF_ERROR(str("region", &c->s3.client.credentials.region));
    } else if (key == "bucket_prefix") {
      KVCS_RETURN_IF_ERROR(str("bucket_prefix", &c->s3.bucket_prefix));
    } else if (key == "parallel_gets") {
      KVCS_RETURN_IF_ERROR(num("parallel_gets", 1, kMaxParallelGets, &n));
      c->s3.client.parallel_gets = static_cast<int>(n);
    } else if (key == "max_connections") {
      KVCS_RETURN_IF_ERROR(num("max_connections", 1, kMaxConnections, &n));
      c->s3.client.max_connections = static_cast<int>(n);
    } else if (key == "max_attempts") {
      KVCS_RETURN_IF_ERROR(num("max_attempts", 1, kMaxAttempts, &n));
      c->s3.client.retry.max_attempts = static_cast<int>(n);
    } else if (key == "attempt_timeout_ms") {
      KVCS_RETURN_IF_ERROR(num("attempt_timeout_ms", 100, 600000, &n));
      c->s3.client.retry.attempt_timeout = std::chrono::milliseconds(n);
    } else if (key == "total_deadline_ms") {
      KVCS_RETURN_IF_ERROR(num("total_deadline_ms", 100, 3600000, &n));
      c->s3.client.retry.total_deadline = std::chrono::milliseconds(n);
    } else if (key == "multipart_threshold_bytes") {
      KVCS_RETURN_IF_ERROR(
          num("multipart_threshold_bytes", store::kMinPartBytes, kMaxPutBodyBytes, &n));
      c->s3.multipart_threshold = static_cast<uint64_t>(n);
    } else if (key == "part_bytes") {
      KVCS_RETURN_IF_ERROR(num("part_bytes", store::kMinPartBytes, kMaxPutBodyBytes, &n));
      c->s3.part_bytes = static_cast<uint64_t>(n);
    } else if (key == "open_prefix_bytes") {
      KVCS_RETURN_IF_ERROR(num("open_prefix_bytes", 0, kMaxOpenPrefixBytes, &n));
      c->s3.open_prefix_bytes = static_cast<size_t>(n);
    } else if (key == "read_ahead_factor") {
      KVCS_RETURN_IF_ERROR(num("read_ahead_factor", 0, kMaxReadAheadFactor, &n));
      c->s3.read_ahead_factor = static_cast<uint32_t>(n);
    } else if (key == "read_ahead_budget_bytes") {
      KVCS_RETURN_IF_ERROR(num("read_ahead_budget_bytes", 0, kMaxReadAheadBudget, &n));
      c->s3.read_ahead_budget = static_cast<uint64_t>(n);
    } else {
      return InvalidArgument("backend config: unknown member \"" + key + "\"");
    }
  }
  return Status::Ok();
}

Status LoadBackendConfigFile(const std::string& path, BackendConfig* config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read backend config " + path);
  std::string text(kMaxBackendConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  Status s = ParseBackendConfig(text, config);
  return s.ok() ? s : s.WithContext(path);
}

Status FinishBackendConfig(BackendConfig* c) {
  if (c->backend != "s3") return Status::Ok();
  auto& cred = c->s3.client.credentials;
  if (cred.access_key.empty()) {
    if (const char* v = std::getenv("KVCS_BACKEND_ACCESS_KEY")) cred.access_key = v;
  }
  if (cred.secret_key.empty()) {
    if (const char* v = std::getenv("KVCS_BACKEND_SECRET_KEY")) cred.secret_key = v;
  }
  if (c->s3.client.endpoint.empty()) {
    return InvalidArgument("the s3 backend needs an endpoint (http[s]://host:port)");
  }
  KVCS_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint(c->s3.client.endpoint));
  if (!ep.tls && (c->s3.client.insecure || !c->s3.client.ca_file.empty())) {
    return InvalidArgument("ca_file and insecure apply to https endpoints only");
  }
  if (c->s3.client.insecure && !c->s3.client.ca_file.empty()) {
    return InvalidArgument("ca_file and insecure contradict each other; choose one");
  }
  if (cred.access_key.empty() || cred.secret_key.empty()) {
    return InvalidArgument(
        "the s3 backend needs an access key and a secret key "
        "(or $KVCS_BACKEND_ACCESS_KEY / $KVCS_BACKEND_SECRET_KEY)");
  }
  if (c->s3.multipart_threshold < c->s3.part_bytes) {
    return InvalidArgument("multipart_threshold_bytes must be at least part_bytes");
  }
  return Status::Ok();
}

Result<std::unique_ptr<store::ObjectStore>> OpenBackendStore(const BackendConfig& config) {
  if (config.backend != "s3") {
    return InvalidArgument("OpenBackendStore opens the s3 backend only");
  }
  KVCS_ASSIGN_OR_RETURN(auto s, S3BackendStore::Open(config.s3));
  return std::unique_ptr<store::ObjectStore>(std::move(s));
}

}  // namespace kvcs::s3client
