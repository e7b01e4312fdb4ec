#include "tensorio/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace kvcs::tensorio {
namespace {

using E = SafetensorsError;
using nlohmann::json;

Status Bad(E e, std::string msg) {
  return InvalidArgument("safetensors: " + std::move(msg), int(e));
}

struct DtypeRow {
  Dtype d;
  std::string_view name;
  size_t size;
};
constexpr DtypeRow kDtypes[] = {
    {Dtype::kBool, "BOOL", 1},      {Dtype::kU8, "U8", 1},          {Dtype::kI8, "I8", 1},
    {Dtype::kF8E4M3, "F8_E4M3", 1}, {Dtype::kF8E5M2, "F8_E5M2", 1}, {Dtype::kI16, "I16", 2},
    {Dtype::kU16, "U16", 2},        {Dtype::kF16, "F16", 2},        {Dtype::kBF16, "BF16", 2},
    {Dtype::kI32, "I32", 4},        {Dtype::kU32, "U32", 4},        {Dtype::kF32, "F32", 4},
    {Dtype::kI64, "I64", 8},        {Dtype::kU64, "U64", 8},        {Dtype::kF64, "F64", 8},
};

constexpr std::string_view kMetadataKey = "__metadata__";

uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
void StoreLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

// Byte size of a tensor, or nullopt on overflow.
std::optional<uint64_t> ByteSize(Dtype d, const std::vector<uint64_t>& shape) {
  uint64_t n = DtypeSize(d);
  for (uint64_t s : shape) {
    if (s != 0 && n > UINT64_MAX / s) return std::nullopt;
    n *= s;
  }
  return n;
}

// Parses JSON, failing on duplicate keys and on nesting deeper than kMaxJsonDepth.
Result<json> ParseStrictJson(std::string_view text) {
  std::vector<std::set<std::string>> keys;
  int depth = 0;
  bool duplicate = false, too_deep = false;
  std::string dup_name;
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        [[fallthrough]];
      case json::parse_event_t::array_start:
        if (++depth > kMaxJsonDepth) too_deep = true;
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        [[fallthrough]];
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() &&
            !keys.back().insert(parsed.get<std::string>()).second) {
          if (!duplicate) dup_name = parsed.get<std::string>();
          duplicate = true;
        }
        break;
      default:
        break;
    }
    // Stop building values once the input is known bad (bounded work on hostile headers).
    return !too_deep;
  };
  json j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (too_deep) {
    return Bad(E::kBadJson,
               "header JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  if (j.is_discarded()) return Bad(E::kBadJson, "header is not valid UTF-8 JSON");
  if (duplicate) return Bad(E::kDuplicateKey, "header repeats the key \"" + dup_name + "\"");
  return j;
}

Result<TensorInfo> ParseEntry(const std::string& name, const json& v, uint64_t data_size) {
  if (!v.is_object()) return Bad(E::kNotObject, "entry \"" + name + "\" is not a JSON object");
  for (auto& [k, _] : v.items()) {
    if (k != "dtype" && k != "shape" && k != "data_offsets") {
      return Bad(E::kBadEntry, "entry \"" + name + "\" has unknown field \"" + k + "\"");
    }
  }
  auto dt = v.find("dtype");
  auto sh = v.find("shape");
  auto off = v.find("data_offsets");
  if (dt == v.end() || sh == v.end() || off == v.end()) {
    return Bad(E::kBadEntry, "entry \"" + name + "\" needs dtype, shape and data_offsets");
  }
  if (!dt->is_string()) return Bad(E::kBadEntry, "entry \"" + name + "\": dtype is not a string");
  TensorInfo t;
  t.name = name;
  auto d = DtypeFromName(dt->get_ref<const std::string&>());
  if (!d) {
    return Bad(E::kUnknownDtype,
               "entry \"" + name + "\": unknown dtype \"" + dt->get<std::string>() + "\"");
  }
  t.dtype = *d;
  if (!sh->is_array() || sh->size() > kMaxRank) {
    return Bad(E::kBadShape, "entry \"" + name + "\": shape must be a list of at most " +
                                 std::to_string(kMaxRank) + " integers");
  }
  for (auto& s : *sh) {
    if (!s.is_number_unsigned()) {
      return Bad(E::kBadShape, "entry \"" + name + "\": shape has a non-integer or negative value");
    }
    t.shape.push_back(s.get<uint64_t>());
  }
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    return Bad(E::kBadOffsets, "entry \"" + name + "\": data_offsets must be [begin, end]");
  }
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  if (t.begin > t.end || t.end > data_size) {
    return Bad(E::kBadOffsets, "entry \"" + name + "\": data_offsets [" + std::to_string(t.begin) +
                                   ", " + std::to_string(t.end) + "] outside the " +
                                   std::to_string(data_size) + "-byte buffer");
  }
  auto want = ByteSize(t.dtype, t.shape);
  if (!want) return Bad(E::kBadShape, "entry \"" + name + "\": shape overflows 64 bits");
  if (*want != t.size()) {
    return Bad(E::kSizeMismatch, "entry \"" + name + "\": shape x " +
                                     std::string(DtypeName(t.dtype)) + " is " +
                                     std::to_string(*want) + " bytes but data_offsets span " +
                                     std::to_string(t.size()));
  }
  return t;
}

}  // namespace

std::string_view SafetensorsErrorName(SafetensorsError e) {
  switch (e) {
    case E::kNone:
      return "none";
    case E::kTooShort:
      return "too_short";
    case E::kHeaderTooLarge:
      return "header_too_large";
    case E::kHeaderTruncated:
      return "header_truncated";
    case E::kBadJson:
      return "bad_json";
    case E::kDuplicateKey:
      return "duplicate_key";
    case E::kNotObject:
      return "not_object";
    case E::kBadEntry:
      return "bad_entry";
    case E::kUnknownDtype:
      return "unknown_dtype";
    case E::kBadShape:
      return "bad_shape";
    case E::kBadOffsets:
      return "bad_offsets";
    case E::kSizeMismatch:
      return "size_mismatch";
    case E::kOverlap:
      return "overlap";
    case E::kGap:
      return "gap";
    case E::kBadMetadata:
      return "bad_metadata";
    case E::kTooManyTensors:
      return "too_many_tensors";
    case E::kNoSuchTensor:
      return "no_such_tensor";
    case E::kIo:
      return "io";
  }
  return "unknown";
}

std::string_view DtypeName(Dtype d) {
  for (auto& r : kDtypes)
    if (r.d == d) return r.name;
  return "?";
}
size_t DtypeSize(Dtype d) {
  for (auto& r : kDtypes)
    if (r.d == d) return r.size;
  return 0;
}
std::optional<Dtype> DtypeFromName(std::string_view name) {
  for (auto& r : kDtypes)
    if (r.name == name) return r.d;
  return std::nullopt;
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t s : shape) n *= s;
  return n;
}

const TensorInfo* SafetensorsHeader::Find(std::string_view name) const {
  for (auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(ByteSpan head, uint64_t file_size) {
  if (file_size < 8 || head.size() < 8) {
    return Bad(E::kTooShort, "file has " + std::to_string(file_size) +
                                 " bytes, fewer than the 8-byte header length");
  }
  uint64_t n = LoadLe64(head.data());
  if (n > kMaxHeaderBytes) {
    return Bad(E::kHeaderTooLarge, "header length " + std::to_string(n) + " exceeds the limit of " +
                                       std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (8 + n > file_size) {
    return Bad(E::kHeaderTruncated, "header length " + std::to_string(n) +
                                        " but the file has only " + std::to_string(file_size - 8) +
                                        " bytes after it");
  }
  if (head.size() < 8 + n) {
    return Status(Code::kNeedMoreData,
                  "safetensors: need the first " + std::to_string(8 + n) + " bytes of the file",
                  int(E::kHeaderTruncated));
  }
  std::string_view text = AsStringView(head.subspan(8, n));
  if (text.empty() || text.front() != '{') {
    return Bad(E::kNotObject, "header does not start with '{'");
  }
  KVCS_ASSIGN_OR_RETURN(json j, ParseStrictJson(text));
  if (!j.is_object()) return Bad(E::kNotObject, "header is not a JSON object");
  if (j.size() > kMaxTensors + 1) {
    return Bad(E::kTooManyTensors, "more than " + std::to_string(kMaxTensors) + " tensors");
  }
  SafetensorsHeader h;
  h.data_start = 8 + n;
  h.data_size = file_size - h.data_start;
  for (auto& [name, v] : j.items()) {
    if (name == kMetadataKey) {
      if (!v.is_object()) return Bad(E::kBadMetadata, "__metadata__ is not a JSON object");
      for (auto& [mk, mv] : v.items()) {
        if (!mv.is_string()) {
          return Bad(E::kBadMetadata, "__metadata__[\"" + mk + "\"] is not a string");
        }
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    KVCS_ASSIGN_OR_RETURN(TensorInfo t, ParseEntry(name, v, h.data_size));
    h.tensors.push_back(std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (auto& t : h.tensors) {
    if (t.begin < at) {
      return Bad(E::kOverlap, "tensor \"" + t.name + "\" at byte " + std::to_string(t.begin) +
                                  " overlaps the previous tensor (ends at " + std::to_string(at) +
                                  ")");
    }
    if (t.begin > at) {
      return Bad(E::kGap, "bytes " + std::to_string(at) + ".." + std::to_string(t.begin) +
                              " of the buffer belong to no tensor");
    }
    at = t.end;
  }
  if (at != h.data_size) {
    return Bad(E::kGap, "the buffer has " + std::to_string(h.data_size - at) +
                            " bytes after the last tensor");
  }
  return h;
}

Result<SafetensorsView> SafetensorsView::Parse(ByteSpan file) {
  SafetensorsView v;
  KVCS_ASSIGN_OR_RETURN(v.header_, ParseSafetensorsHeader(file, file.size()));
  v.file_ = file;
  return v;
}

ByteSpan SafetensorsView::data(const TensorInfo& t) const {
  return file_.subspan(header_.data_start + t.begin, t.size());
}

Result<ByteSpan> SafetensorsView::data(std::string_view name) const {
  const TensorInfo* t = header_.Find(name);
  if (!t)
    return NotFound("safetensors: no tensor \"" + std::string(name) + "\"", int(E::kNoSuchTensor));
  return data(*t);
}

Result<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno), int(E::kIo));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(path + " is not a regular file", int(E::kIo));
  }
  SafetensorsFile f;
  f.size_ = uint64_t(st.st_size);
  if (f.size_ < 8) {
    ::close(fd);
    return Bad(E::kTooShort, path + " has " + std::to_string(f.size_) +
                                 " bytes, fewer than the 8-byte header length");
  }
  void* m = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (m == MAP_FAILED)
    return IoError("cannot map " + path + ": " + std::strerror(err), int(E::kIo));
  f.map_ = m;
  auto v = SafetensorsView::Parse(ByteSpan(static_cast<const uint8_t*>(m), f.size_));
  if (!v.ok()) return v.status();  // f's destructor unmaps
  f.view_ = std::move(*v);
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      view_(std::move(o.view_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
    view_ = std::move(o.view_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

namespace {

// The header for tensors laid out back to back in `specs` order.
Result<Bytes> EncodeHeaderForSpecs(const std::vector<TensorSpec>& specs,
                                   const std::map<std::string, std::string>& metadata) {
  json j = json::object();
  uint64_t at = 0;
  for (auto& t : specs) {
    if (t.name == kMetadataKey) return Bad(E::kBadEntry, "a tensor cannot be named __metadata__");
    if (j.contains(t.name)) return Bad(E::kDuplicateKey, "two tensors named \"" + t.name + "\"");
    if (DtypeSize(t.dtype) == 0)
      return Bad(E::kUnknownDtype, "tensor \"" + t.name + "\": bad dtype");
    auto n = ByteSize(t.dtype, t.shape);
    if (!n || *n > UINT64_MAX - at)
      return Bad(E::kBadShape, "tensor \"" + t.name + "\": too large");
    j[t.name] = {
        {"dtype", DtypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + *n}}};
    at += *n;
  }
  if (!metadata.empty()) j[std::string(kMetadataKey)] = metadata;
  std::string text;
  try {
    text = j.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::strict);
  } catch (const json::exception& e) {  // invalid UTF-8 in a name or metadata value
    return Bad(E::kBadJson, std::string("cannot encode header: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes) {
    return Bad(E::kHeaderTooLarge, "header would be " + std::to_string(text.size()) + " bytes");
  }
  std::string out(8, '\0');
  StoreLe64(reinterpret_cast<uint8_t*>(out.data()), text.size());
  out += text;
  return Bytes(out.begin(), out.end());
}

}  // namespace

Result<Bytes> EncodeSafetensorsHeader(const std::vector<TensorToWrite>& tensors,
                                      const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (auto& t : tensors) {
    auto want = ByteSize(t.dtype, t.shape);
    if (DtypeSize(t.dtype) != 0 && (!want || *want != t.data.size())) {
      return Bad(E::kSizeMismatch, "tensor \"" + t.name + "\": shape needs " +
                                       (want ? std::to_string(*want) : "too many") +
                                       " bytes, data has " + std::to_string(t.data.size()));
    }
    specs.push_back({t.name, t.dtype, t.shape});
  }
  return EncodeHeaderForSpecs(specs, metadata);
}

Result<Bytes> EncodeSafetensors(const std::vector<TensorToWrite>& tensors,
                                const std::map<std::string, std::string>& metadata) {
  KVCS_ASSIGN_OR_RETURN(Bytes out, EncodeSafetensorsHeader(tensors, metadata));
  for (auto& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

Result<SafetensorsWriter> SafetensorsWriter::Create(
    const std::string& path, std::vector<TensorSpec> specs,
    const std::map<std::string, std::string>& metadata) {
  KVCS_ASSIGN_OR_RETURN(Bytes head, EncodeHeaderForSpecs(specs, metadata));
  SafetensorsWriter w;
  uint64_t at = 0;
  for (auto& s : specs) {
    uint64_t n = *ByteSize(s.dtype, s.shape);  // checked by EncodeHeaderForSpecs
    w.begin_.push_back(at);
    w.size_.push_back(n);
    w.written_.push_back(0);
    at += n;
  }
  w.path_ = path;
  w.tmp_ = path + ".tmp";
  w.data_start_ = head.size();
  w.fd_ = ::open(w.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd_ < 0)
    return IoError("cannot create " + w.tmp_ + ": " + std::strerror(errno), int(E::kIo));
  if (::ftruncate(w.fd_, off_t(head.size() + at)) != 0) {
    return IoError("cannot size " + w.tmp_ + ": " + std::strerror(errno), int(E::kIo));
  }
  KVCS_RETURN_IF_ERROR(w.Write(SIZE_MAX, 0, head));
  return w;
}

SafetensorsWriter::SafetensorsWriter(SafetensorsWriter&& o) noexcept
    : path_(std::move(o.path_)),
      tmp_(std::move(o.tmp_)),
      fd_(std::exchange(o.fd_, -1)),
      data_start_(o.data_start_),
      begin_(std::move(o.begin_)),
      size_(std::move(o.size_)),
      written_(std::move(o.written_)) {}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

// index == SIZE_MAX writes the header at file offset `offset`.
Status SafetensorsWriter::Write(size_t index, uint64_t offset, ByteSpan bytes) {
  if (fd_ < 0) return Status(Code::kFailedPrecondition, "safetensors writer is closed");
  uint64_t at = offset;
  if (index != SIZE_MAX) {
    if (index >= size_.size() || offset > size_[index] || bytes.size() > size_[index] - offset) {
      return InvalidArgument("safetensors writer: write outside tensor bounds",
                             int(E::kBadOffsets));
    }
    at = data_start_ + begin_[index] + offset;
    written_[index] += bytes.size();
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, off_t(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError("cannot write " + tmp_ + ": " + std::strerror(errno), int(E::kIo));
    done += size_t(n);
  }
  return Status::Ok();
}

Status SafetensorsWriter::Finish() {
  if (fd_ < 0) return Status(Code::kFailedPrecondition, "safetensors writer is closed");
  for (size_t i = 0; i < size_.size(); ++i) {
    if (written_[i] != size_[i]) {
      return Internal("safetensors writer: tensor " + std::to_string(i) + " got " +
                      std::to_string(written_[i]) + " of " + std::to_string(size_[i]) + " bytes");
    }
  }
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_.c_str());
    return IoError("cannot write " + path_ + ": " + std::strerror(err), int(E::kIo));
  }
  return Status::Ok();
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  Result<Bytes> head = EncodeSafetensorsHeader(tensors, metadata);
  if (!head.ok()) return head.status();
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return IoError("cannot create " + tmp + ": " + std::strerror(errno), int(E::kIo));
  bool ok = std::fwrite(head->data(), 1, head->size(), f) == head->size();
  for (auto& t : tensors) {
    if (!ok) break;
    ok = t.data.empty() || std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size();
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return IoError("cannot write " + path + ": " + std::strerror(err), int(E::kIo));
  }
  return Status::Ok();
}

}  // namespace kvcs::tensorio
