#include "rados_store/rados_config.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace kvcs::rados_store {

namespace {
constexpr size_t kMaxConfigBytes = 64 << 10;
}

bool IsRadosBackendConfig(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  return !j.is_discarded() && j.is_object() && j.contains("backend") && j["backend"].is_string() &&
         j["backend"].get<std::string>() == "rados";
}

Status ReadBackendConfigFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read backend config " + path);
  text->assign(kMaxConfigBytes + 1, '\0');
  in.read(text->data(), static_cast<std::streamsize>(text->size()));
  text->resize(static_cast<size_t>(in.gcount()));
  if (text->size() > kMaxConfigBytes) return InvalidArgument(path + ": backend config over 64 KiB");
  return Status::Ok();
}

Status ParseRadosBackendConfig(std::string_view text, RadosStoreOptions* o) {
  if (text.size() > kMaxConfigBytes) return InvalidArgument("backend config over 64 KiB");
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("backend config is not a JSON object");
  }
  auto str = [&](const std::string& name, std::string* out) -> Status {
    if (!j[name].is_string()) {
      return InvalidArgument("rados backend config: " + name + " must be a string");
    }
    *out = j[name].get<std::string>();
    return Status::Ok();
  };
  auto num = [&](const std::string& name, int64_t lo, int64_t hi) -> Result<int64_t> {
    const auto& v = j[name];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      return InvalidArgument("rados backend config: " + name + " must be an integer in [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v.get<int64_t>();
  };
  for (const auto& item : j.items()) {
    const std::string key = item.key();
    if (key == "backend") {
      std::string b;
      KVCS_RETURN_IF_ERROR(str(key, &b));
      if (b != "rados") return InvalidArgument("rados backend config: backend must be \"rados\"");
    } else if (key == "pool") {
      KVCS_RETURN_IF_ERROR(str(key, &o->connect.pool));
    } else if (key == "namespace") {
      KVCS_RETURN_IF_ERROR(str(key, &o->connect.rados_namespace));
    } else if (key == "ceph_conf") {
      KVCS_RETURN_IF_ERROR(str(key, &o->connect.ceph_conf));
    } else if (key == "keyring") {
      KVCS_RETURN_IF_ERROR(str(key, &o->connect.keyring));
    } else if (key == "client_id") {
      KVCS_RETURN_IF_ERROR(str(key, &o->connect.client_id));
    } else if (key == "op_timeout_s") {
      KVCS_ASSIGN_OR_RETURN(int64_t n, num(key, 1, 3600));
      o->connect.op_timeout_s = static_cast<int>(n);
    } else if (key == "index_shards") {
      KVCS_ASSIGN_OR_RETURN(int64_t n, num(key, 1, kMaxIndexShards));
      o->index_shards = static_cast<uint32_t>(n);
    } else if (key == "stripe_bytes") {
      KVCS_ASSIGN_OR_RETURN(int64_t n, num(key, kMinStripeBytes, kMaxStripeBytes));
      o->stripe_bytes = static_cast<uint64_t>(n);
    } else if (key == "max_reads_in_flight") {
      KVCS_ASSIGN_OR_RETURN(int64_t n, num(key, 1, kMaxReadsInFlight));
      o->max_reads_in_flight = static_cast<size_t>(n);
    } else if (key == "max_read_bytes_in_flight") {
      KVCS_ASSIGN_OR_RETURN(int64_t n, num(key, kMinStripeBytes, kMaxReadBytesInFlight));
      o->max_read_bytes_in_flight = static_cast<uint64_t>(n);
    } else {
      return InvalidArgument("rados backend config: unknown member \"" + key + "\"");
    }
  }
  return Status::Ok();
}

Status FinishRadosBackendConfig(const RadosStoreOptions& o) {
  if (o.connect.pool.empty())
    return InvalidArgument("the rados backend needs a pool (--rados-pool)");
  if (o.connect.ceph_conf.empty()) {
    return InvalidArgument("the rados backend needs a ceph.conf (--ceph-conf)");
  }
  return Status::Ok();
}

}  // namespace kvcs::rados_store
