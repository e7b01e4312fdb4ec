// DataStreamParser: the incremental parser of one unidirectional MOQT data stream (draft §11):
// a SUBGROUP_HEADER stream, a FETCH_HEADER stream (fetch or fill fetch) or a padding stream.
//
// Feed it bytes in chunks of any size with OnData(); it pushes what it decodes to a
// DataStreamVisitor in stream order: the stream header, then per object OnObjectHeader() followed
// by the payload in zero or more OnObjectPayload() chunks (none when the payload is empty), End of
// Range markers on fetch streams, and OnStreamEnd() on a FIN between objects. Payload bytes are
// passed through without being buffered; only header units (<= kMaxDataUnitBytes) and an object's
// Properties field (<= kMaxObjectPropertiesBytes) are buffered. The first malformed input calls
// OnError() exactly once and the parser ignores everything afterwards. A FIN inside a header or
// an object is kFinMidObject.
//
// Lifetime: the visitor must outlive the parser. Not thread-safe; the visitor must not call
// OnData() from inside a callback (re-entry is reported as an internal error).
#ifndef KVCS_MOQT_MOQT_DATA_PARSER_H_
#define KVCS_MOQT_MOQT_DATA_PARSER_H_

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_options.h"

namespace kvcs::moqt {

enum class UniStreamKind { kSubgroup, kFetch, kControl, kPadding };

// Classifies a unidirectional stream by its first vi64: kNeedMoreData until the type is complete,
// a WireError for an unknown or invalid type. The session uses it to route a new stream to the
// control-stream parser or to a DataStreamParser.
Result<UniStreamKind> PeekUniStreamType(ByteSpan first_bytes);

class DataStreamVisitor {
 public:
  virtual ~DataStreamVisitor() = default;
  // Subgroup stream header. With SubgroupIdMode::kFirstObject the ID is reported as 0 here; each
  // ObjectHeader carries the resolved ID.
  virtual void OnSubgroupHeader(const SubgroupHeader& header) {}
  // Fetch stream header. Returns the group order of the fetch (or fill) it answers; the stream
  // itself does not say, and Group ID deltas depend on it.
  virtual GroupOrder OnFetchHeader(const FetchHeader& header) { return GroupOrder::kAscending; }
  virtual void OnPaddingStream() {}
  virtual void OnObjectHeader(const ObjectHeader& object) = 0;
  // A payload chunk of the last announced object; `end_of_object` on its last chunk.
  virtual void OnObjectPayload(ByteSpan chunk, bool end_of_object) = 0;
  virtual void OnEndOfRange(const EndOfRange& marker) {}
  // FIN between objects (or after the header): the stream ended cleanly.
  virtual void OnStreamEnd() = 0;
  // Called once, on the first malformed input (a WireError Status).
  virtual void OnError(const Status& error) = 0;
};

class DataStreamParser {
 public:
  explicit DataStreamParser(DataStreamVisitor* visitor, const WireOptions& options = {})
      : visitor_(visitor), options_(options) {}
  DataStreamParser(const DataStreamParser&) = delete;
  DataStreamParser& operator=(const DataStreamParser&) = delete;

  // Feeds stream bytes; `fin` = the stream ended after them.
  void OnData(ByteSpan data, bool fin);

  bool failed() const { return state_ == State::kFailed; }
  bool finished() const { return state_ == State::kFinished; }

 private:
  enum class State {
    kStreamHeader,
    kSubgroupObject,  // unit: Object ID Delta [, Properties Length]
    kFetchObject,     // unit: flags .. [Properties Length] (or a whole End of Range marker)
    kProperties,      // raw Properties bytes
    kObjectTail,      // unit: Payload Length [, Status]
    kPayload,
    kPadding,
    kFinished,
    kFailed,
  };
  enum class StreamKind { kNone, kSubgroup, kFetch, kPadding };

  // Parses one unit from `in`: bytes consumed, kNeedMoreData, or a WireError. Commits state only
  // on success.
  Result<size_t> ParseUnit(ByteSpan in);
  Result<size_t> ParseStreamHeader(ByteSpan in);
  Result<size_t> ParseSubgroupObject(ByteSpan in);
  Result<size_t> ParseFetchObject(ByteSpan in);
  Result<size_t> ParseObjectTail(ByteSpan in);
  void ConsumeUnit(ByteSpan* data);
  void AfterObjectStart(uint64_t properties_length, bool has_properties);
  void FinishObjectHeader();
  void ObjectDone();
  void Fail(const Status& s);
  bool BetweenObjects() const;

  DataStreamVisitor* visitor_;
  WireOptions options_;
  State state_ = State::kStreamHeader;
  StreamKind kind_ = StreamKind::kNone;
  bool processing_ = false;
  Bytes pending_;  // a partial unit (<= kMaxDataUnitBytes)

  // Subgroup stream state.
  SubgroupHeader subgroup_;
  std::optional<uint64_t> prior_object_id_;
  // Fetch stream state.
  GroupOrder fetch_order_ = GroupOrder::kAscending;
  std::optional<Location> fetch_prior_;           // last object or marker
  std::optional<uint64_t> fetch_prior_subgroup_;  // last object that had a subgroup
  std::optional<uint8_t> fetch_prior_priority_;   // last object

  // The object being parsed.
  ObjectHeader object_;
  uint64_t properties_remaining_ = 0;
  Bytes properties_buf_;
  uint64_t payload_remaining_ = 0;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_DATA_PARSER_H_
