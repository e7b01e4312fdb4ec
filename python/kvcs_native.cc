// _kvcs_native: the Python binding of the engine C ABI (include/kvcs/kvcs.h), a thin layer over
// libkvcs.so. Engine buffers are taken through the buffer protocol (numpy arrays, or torch
// tensors through Tensor.numpy(), which shares their memory): C-contiguous, writable for loads,
// of the descriptor's dtype; nothing is copied on the way in. The GIL is released around every
// call that waits or copies. A load keeps its buffers alive until it is closed. Errors raise
// KvcsError(status_name, message), except a load's outcome: wait_layer lists the failed blocks
// and finish returns (status_name, message).
#include <kvcs/kvcs.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;

namespace {

PyObject* kvcs_error_type = nullptr;

[[noreturn]] void Raise(int status) {
  py::tuple args = py::make_tuple(kvcs_status_name(status), std::string(kvcs_last_error()));
  PyErr_SetObject(kvcs_error_type, args.ptr());
  throw py::error_already_set();
}
[[noreturn]] void RaiseArg(int status, const std::string& message) {
  py::tuple args = py::make_tuple(kvcs_status_name(status), message);
  PyErr_SetObject(kvcs_error_type, args.ptr());
  throw py::error_already_set();
}
void Check(int status) {
  if (status != KVCS_OK) Raise(status);
}

std::vector<uint32_t> ToU32(const std::vector<int64_t>& v, const char* what) {
  std::vector<uint32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0 || v[i] > UINT32_MAX) {
      RaiseArg(KVCS_ERR_INVALID_ARGUMENT, std::string(what) + " values must fit in u32");
    }
    out[i] = static_cast<uint32_t>(v[i]);
  }
  return out;
}

// Acceptable buffer formats per kv dtype (bf16 has no numpy type: pass a uint16/int16 view).
bool FormatOk(const std::string& dtype, const py::buffer_info& b) {
  const std::string& f = b.format;
  if (dtype == "fp32") return b.itemsize == 4 && f == "f";
  if (dtype == "fp16") return b.itemsize == 2 && f == "e";
  if (dtype == "bf16") return b.itemsize == 2 && (f == "H" || f == "h");
  return false;
}

// One engine buffer: checked and held while the ABI may touch it.
struct HeldBuffer {
  py::buffer owner;
  void* ptr = nullptr;
  size_t bytes = 0;
};

HeldBuffer Hold(const py::object& o, const std::string& dtype, bool writable, const char* what) {
  if (!PyObject_CheckBuffer(o.ptr())) {
    RaiseArg(KVCS_ERR_INVALID_ARGUMENT,
             std::string(what) + ": not a buffer (pass a numpy array or Tensor.numpy())");
  }
  py::buffer b = py::reinterpret_borrow<py::buffer>(o);
  py::buffer_info info = b.request(writable);
  if (!FormatOk(dtype, info)) {
    RaiseArg(KVCS_ERR_INVALID_ARGUMENT, std::string(what) + ": element format '" + info.format +
                                            "' does not match kv_dtype " + dtype);
  }
  // C-contiguous: strides are those of the shape, row-major.
  py::ssize_t expect = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != expect) {
      RaiseArg(KVCS_ERR_INVALID_ARGUMENT, std::string(what) + ": buffer is not C-contiguous");
    }
    expect *= info.shape[d];
  }
  return HeldBuffer{b, info.ptr, static_cast<size_t>(info.size * info.itemsize)};
}

kvcs_paged_layout ToLayout(const std::tuple<int64_t, int64_t, int64_t>& t) {
  return kvcs_paged_layout{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
}

class Load {
 public:
  Load(kvcs_load* h, std::vector<HeldBuffer> held, size_t n_blocks)
      : h_(h), held_(std::move(held)), n_blocks_(n_blocks) {}
  ~Load() { Close(); }
  // Failed block indices of the layer ([] = all in place); raises on cancel and misuse.
  std::vector<uint32_t> WaitLayer(uint32_t layer) { return std::get<0>(WaitLayerDetail(layer)); }
  // (failed block indices, why they failed: kvcs_last_error, "" when none failed).
  std::tuple<std::vector<uint32_t>, std::string> WaitLayerDetail(uint32_t layer) {
    Live();
    std::vector<uint32_t> failed(n_blocks_);
    size_t n = 0;
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_load_wait_layer(h_, layer, failed.data(), failed.size(), &n);
    }
    if (s != KVCS_OK && s != KVCS_ERR_BLOCKS_FAILED && s != KVCS_ERR_TRANSPORT) Raise(s);
    failed.resize(n);
    return {failed, s == KVCS_OK ? std::string() : std::string(kvcs_last_error())};
  }
  // Where each block of the layer came from: "store", "relay", "holder" or "recompute" (waits
  // for it).
  std::vector<std::string> BlockSources(uint32_t layer) {
    Live();
    std::vector<uint8_t> src(n_blocks_);
    size_t n = 0;
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_load_block_sources(h_, layer, src.data(), src.size(), &n);
    }
    if (s != KVCS_OK) Raise(s);
    std::vector<std::string> out;
    for (size_t i = 0; i < n && i < src.size(); ++i) {
      out.push_back(src[i] == KVCS_SOURCE_STORE    ? "store"
                    : src[i] == KVCS_SOURCE_RELAY  ? "relay"
                    : src[i] == KVCS_SOURCE_HOLDER ? "holder"
                                                   : "recompute");
    }
    return out;
  }
  void Cancel() {
    Live();
    py::gil_scoped_release nogil;
    kvcs_load_cancel(h_);
  }
  // (the load's overall status name: "KVCS_OK", "KVCS_ERR_BLOCKS_FAILED"..., its message: ""
  // when OK, else the first failure's). Raises only on misuse (finished twice, closed).
  std::tuple<std::string, std::string> Finish() {
    Live();
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_load_finish(h_);
    }
    if (s == KVCS_ERR_FINISHED || s == KVCS_ERR_INVALID_ARGUMENT) Raise(s);
    return {kvcs_status_name(s), s == KVCS_OK ? std::string() : std::string(kvcs_last_error())};
  }
  void Close() {
    if (!h_) return;
    {
      py::gil_scoped_release nogil;
      kvcs_load_free(h_);  // joins the loader: nothing writes into the buffers afterwards
    }
    h_ = nullptr;
    held_.clear();
  }

 private:
  void Live() const {
    if (!h_) RaiseArg(KVCS_ERR_FINISHED, "load is closed");
  }
  kvcs_load* h_;
  std::vector<HeldBuffer> held_;
  size_t n_blocks_;
};

class Save {
 public:
  Save(kvcs_save* h, std::string dtype) : h_(h), dtype_(std::move(dtype)) {}
  ~Save() { Close(); }
  void SaveLayer(uint32_t layer, const py::object& k, const py::object& v) {
    Live();
    HeldBuffer hk = Hold(k, dtype_, false, "k"), hv = Hold(v, dtype_, false, "v");
    kvcs_layer_buffers b{hk.ptr, hk.bytes, hv.ptr, hv.bytes};
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_save_layer(h_, layer, &b);
    }
    Check(s);
  }
  size_t Finish() {
    Live();
    size_t stored = 0;
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_save_finish(h_, &stored);
    }
    Check(s);
    return stored;
  }
  void Close() {
    if (h_) kvcs_save_free(h_);
    h_ = nullptr;
  }

 private:
  void Live() const {
    if (!h_) RaiseArg(KVCS_ERR_FINISHED, "save is closed");
  }
  kvcs_save* h_;
  std::string dtype_;
};

class Client {
 public:
  Client(std::optional<std::string> store_url, const std::string& access_key,
         const std::string& secret_key, const py::dict& descriptor, const std::string& bucket,
         std::optional<py::bytes> scope_key, std::optional<std::string> shm_socket,
         bool create_bucket, std::optional<std::string> relay_url,
         std::optional<std::string> index_url, std::optional<std::string> producer_key_pem,
         uint64_t shm_buffer_bytes, uint64_t compute_us_per_layer, uint64_t stall_target_us,
         std::optional<std::string> relay_ca_file, bool relay_insecure,
         std::optional<std::string> index_token, uint64_t recompute_ns_per_token_layer,
         std::optional<std::string> store_ca_file, bool store_insecure) {
    auto str = [&](const char* k, const char* dflt) -> std::string {
      if (!descriptor.contains(k)) {
        if (dflt) return dflt;
        RaiseArg(KVCS_ERR_INVALID_ARGUMENT, std::string("descriptor: missing ") + k);
      }
      return py::str(descriptor[k]);
    };
    auto num = [&](const char* k) -> uint32_t {
      if (!descriptor.contains(k)) {
        RaiseArg(KVCS_ERR_INVALID_ARGUMENT, std::string("descriptor: missing ") + k);
      }
      int64_t v = descriptor[k].cast<int64_t>();
      if (v < 0 || v > UINT32_MAX) {
        RaiseArg(KVCS_ERR_INVALID_ARGUMENT, std::string("descriptor: ") + k + " out of range");
      }
      return static_cast<uint32_t>(v);
    };
    model_ = str("model", nullptr);
    model_rev_ = str("model_rev", nullptr);
    tokenizer_rev_ = str("tokenizer_rev", nullptr);
    attn_ = str("attn", "gqa");
    dtype_ = str("kv_dtype", nullptr);
    std::optional<std::string> adapter;
    if (descriptor.contains("adapter")) adapter = str("adapter", nullptr);
    std::string key;
    if (scope_key) {
      key = *scope_key;
      if (key.size() != 32) RaiseArg(KVCS_ERR_INVALID_ARGUMENT, "scope_key must be 32 bytes");
    }
    kvcs_client_config c{};
    c.store_url = store_url ? store_url->c_str() : nullptr;
    c.relay_ca_file = relay_ca_file ? relay_ca_file->c_str() : nullptr;
    c.relay_insecure = relay_insecure;
    c.store_ca_file = store_ca_file ? store_ca_file->c_str() : nullptr;
    c.store_insecure = store_insecure;
    c.bucket = bucket.c_str();
    c.access_key = access_key.c_str();
    c.secret_key = secret_key.c_str();
    c.create_bucket = create_bucket;
    c.shm_socket = shm_socket ? shm_socket->c_str() : nullptr;
    c.shm_buffer_bytes = shm_buffer_bytes;
    c.compute_us_per_layer = compute_us_per_layer;
    c.stall_target_us = stall_target_us;
    c.recompute_ns_per_token_layer = recompute_ns_per_token_layer;
    c.relay_url = relay_url ? relay_url->c_str() : nullptr;
    c.index_url = index_url ? index_url->c_str() : nullptr;
    c.index_token = index_token ? index_token->c_str() : nullptr;
    c.scope_key = scope_key ? reinterpret_cast<const uint8_t*>(key.data()) : nullptr;
    c.producer_key_pem = producer_key_pem ? producer_key_pem->c_str() : nullptr;
    c.descriptor = kvcs_descriptor{model_.c_str(),         model_rev_.c_str(),
                                   tokenizer_rev_.c_str(), adapter ? adapter->c_str() : nullptr,
                                   attn_.c_str(),          num("layers"),
                                   num("kv_heads"),        num("head_dim"),
                                   dtype_.c_str(),         num("block_tokens")};
    layers_ = c.descriptor.layers;
    block_tokens_ = c.descriptor.block_tokens;
    int s = KVCS_OK;
    {
      py::gil_scoped_release nogil;
      h_ = kvcs_client_create(&c, &s);
    }
    if (!h_) Raise(s);
  }
  ~Client() {
    if (h_) kvcs_client_free(h_);
  }
  uint32_t layers() const { return layers_; }
  uint32_t block_tokens() const { return block_tokens_; }
  const std::string& kv_dtype() const { return dtype_; }

  std::tuple<py::bytes, std::string> BlockKey(const std::vector<int64_t>& tokens, size_t index) {
    auto t = ToU32(tokens, "tokens");
    uint8_t key[32];
    char name[256];
    Check(kvcs_block_key(h_, t.data(), t.size(), index, key, name, sizeof name));
    return {py::bytes(reinterpret_cast<const char*>(key), 32), std::string(name)};
  }
  size_t Lookup(const std::vector<int64_t>& tokens, size_t first_block) {
    auto t = ToU32(tokens, "tokens");
    size_t n = 0;
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_lookup(h_, t.data(), t.size(), first_block, &n);
    }
    Check(s);
    return n;
  }
  // (loadable tokens, where: "relay URL publication NS", "store URL bucket B" or "").
  std::pair<size_t, std::string> LookupSource(const std::vector<int64_t>& tokens,
                                              size_t first_block) {
    auto t = ToU32(tokens, "tokens");
    size_t n = 0;
    char where[512];
    int s;
    {
      py::gil_scoped_release nogil;
      s = kvcs_lookup_source(h_, t.data(), t.size(), first_block, &n, where, sizeof where);
    }
    Check(s);
    return {n, std::string(where)};
  }
  std::unique_ptr<Load> StartLoad(const std::vector<int64_t>& tokens, size_t first_block,
                                  const std::vector<int64_t>& block_ids,
                                  const std::vector<std::pair<py::object, py::object>>& layers,
                                  const std::tuple<int64_t, int64_t, int64_t>& layout) {
    auto t = ToU32(tokens, "tokens");
    auto ids = ToU32(block_ids, "block_ids");
    std::vector<HeldBuffer> held;
    std::vector<kvcs_layer_buffers> bufs;
    for (const auto& [k, v] : layers) {
      HeldBuffer hk = Hold(k, dtype_, true, "k"), hv = Hold(v, dtype_, true, "v");
      bufs.push_back(kvcs_layer_buffers{hk.ptr, hk.bytes, hv.ptr, hv.bytes});
      held.push_back(std::move(hk));
      held.push_back(std::move(hv));
    }
    kvcs_paged_layout l = ToLayout(layout);
    int s = KVCS_OK;
    kvcs_load* h;
    {
      py::gil_scoped_release nogil;
      h = kvcs_load_start(h_, t.data(), t.size(), first_block, ids.data(), ids.size(), bufs.data(),
                          bufs.size(), &l, &s);
    }
    if (!h) Raise(s);
    return std::make_unique<Load>(h, std::move(held), ids.size());
  }
  std::unique_ptr<Save> BeginSave(const std::vector<int64_t>& tokens, size_t first_block,
                                  const std::vector<int64_t>& block_ids,
                                  const std::tuple<int64_t, int64_t, int64_t>& layout) {
    auto t = ToU32(tokens, "tokens");
    auto ids = ToU32(block_ids, "block_ids");
    kvcs_paged_layout l = ToLayout(layout);
    int s = KVCS_OK;
    kvcs_save* h =
        kvcs_save_begin(h_, t.data(), t.size(), first_block, ids.data(), ids.size(), &l, &s);
    if (!h) Raise(s);
    return std::make_unique<Save>(h, dtype_);
  }

 private:
  kvcs_client* h_ = nullptr;
  std::string model_, model_rev_, tokenizer_rev_, attn_, dtype_;
  uint32_t layers_ = 0, block_tokens_ = 0;
};

}  // namespace

PYBIND11_MODULE(_kvcs_native, m) {
  m.doc() = "kvcs engine API (include/kvcs/kvcs.h) for Python";
  kvcs_error_type = PyErr_NewException("_kvcs_native.KvcsError", PyExc_RuntimeError, nullptr);
  m.attr("KvcsError") = py::handle(kvcs_error_type);
  m.def("status_name", &kvcs_status_name);

  py::class_<Load>(m, "Load")
      .def("wait_layer", &Load::WaitLayer, py::arg("layer"),
           "Blocks until the layer is in place; returns the failed block indices ([] = all).")
      .def("wait_layer_detail", &Load::WaitLayerDetail, py::arg("layer"),
           "wait_layer, also saying why: (failed block indices, message; '' when none failed).")
      .def("block_sources", &Load::BlockSources, py::arg("layer"),
           "Where each block of the layer came from: 'store', 'relay', 'holder' or 'recompute'.")
      .def("cancel", &Load::Cancel)
      .def("finish", &Load::Finish,
           "Waits for the loader; returns (overall status name, message: '' when KVCS_OK).")
      .def("close", &Load::Close);
  py::class_<Save>(m, "Save")
      .def("save_layer", &Save::SaveLayer, py::arg("layer"), py::arg("k"), py::arg("v"))
      .def("finish", &Save::Finish, "One aggregated PUT; returns the blocks stored.")
      .def("close", &Save::Close);
  py::class_<Client>(m, "Client")
      .def(py::init<std::optional<std::string>, const std::string&, const std::string&,
                    const py::dict&, const std::string&, std::optional<py::bytes>,
                    std::optional<std::string>, bool, std::optional<std::string>,
                    std::optional<std::string>, std::optional<std::string>, uint64_t, uint64_t,
                    uint64_t, std::optional<std::string>, bool, std::optional<std::string>,
                    uint64_t, std::optional<std::string>, bool>(),
           py::arg("store_url"), py::arg("access_key"), py::arg("secret_key"),
           py::arg("descriptor"), py::arg("bucket") = "kvcache", py::arg("scope_key") = py::none(),
           py::arg("shm_socket") = py::none(), py::arg("create_bucket") = false,
           py::arg("relay_url") = py::none(), py::arg("index_url") = py::none(),
           py::arg("producer_key_pem") = py::none(), py::arg("shm_buffer_bytes") = 0,
           py::arg("compute_us_per_layer") = 0, py::arg("stall_target_us") = 0,
           py::arg("relay_ca_file") = py::none(), py::arg("relay_insecure") = false,
           py::arg("index_token") = py::none(), py::arg("recompute_ns_per_token_layer") = 0,
           py::arg("store_ca_file") = py::none(), py::arg("store_insecure") = false)
      .def_property_readonly("layers", &Client::layers)
      .def_property_readonly("block_tokens", &Client::block_tokens)
      .def_property_readonly("kv_dtype", &Client::kv_dtype)
      .def("block_key", &Client::BlockKey, py::arg("tokens"), py::arg("index"))
      .def("lookup", &Client::Lookup, py::arg("tokens"), py::arg("first_block") = 0)
      .def("lookup_source", &Client::LookupSource, py::arg("tokens"), py::arg("first_block") = 0,
           "(loadable tokens, where they are: 'index URL holder H', 'relay URL publication NS', "
           "'store URL bucket B' or '')")
      .def("load", &Client::StartLoad, py::arg("tokens"), py::arg("first_block"),
           py::arg("block_ids"), py::arg("layers"), py::arg("layout"))
      .def("save", &Client::BeginSave, py::arg("tokens"), py::arg("first_block"),
           py::arg("block_ids"), py::arg("layout"));
}
