// Tests of TrackStore: track and announced-namespace bookkeeping and its listeners.
#include "moqt_session/moqt_track_store.h"

#include <gtest/gtest.h>

#include <string>

namespace kvcs::moqt {
namespace {

struct NsLog : NamespaceListener {
  void OnNamespaceAdded(const TrackNamespace& ns) override { added.push_back(ns); }
  void OnNamespaceRemoved(const TrackNamespace& ns) override { removed.push_back(ns); }
  std::vector<TrackNamespace> added, removed;
};

TEST(TrackStoreTest, NamespacesFromTracksAndAnnouncements) {
  TrackStore s;
  NsLog log;
  s.AddNamespaceListener(&log);
  ASSERT_TRUE(s.CreateTrack({{"a", "b"}, "t1"}).ok());
  ASSERT_TRUE(s.CreateTrack({{"a", "b"}, "t2"}).ok());  // same namespace: one notification
  EXPECT_EQ(s.CreateTrack({{"a", "b"}, "t2"}).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(s.CreateTrack({{""}, "t"}).status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(s.AddAnnouncedNamespace({"c"}).ok());
  EXPECT_EQ(log.added, (std::vector<TrackNamespace>{{"a", "b"}, {"c"}}));
  EXPECT_EQ(s.ListNamespaces(), (std::vector<TrackNamespace>{{"a", "b"}, {"c"}}));
  s.RemoveTrack({{"a", "b"}, "t1"});
  EXPECT_TRUE(log.removed.empty());
  s.RemoveTrack({{"a", "b"}, "t2"});
  s.RemoveAnnouncedNamespace({"c"});
  EXPECT_EQ(log.removed, (std::vector<TrackNamespace>{{"a", "b"}, {"c"}}));
  EXPECT_EQ(s.FindTrack({{"a", "b"}, "t1"}), nullptr);
  s.RemoveNamespaceListener(&log);
  EXPECT_TRUE(NamespaceHasPrefix({"a", "b"}, {"a"}));
  EXPECT_TRUE(NamespaceHasPrefix({"a", "b"}, {}));
  EXPECT_FALSE(NamespaceHasPrefix({"a"}, {"a", "b"}));
}

TEST(TrackStoreTest, RemovingAndRecreatingTracksKeepsNamespaceCountsExact) {
  TrackStore s;
  NsLog log;
  s.AddNamespaceListener(&log);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(s.CreateTrack({{"n"}, std::to_string(i)}).ok());
    for (int i = 0; i < 50; ++i) s.RemoveTrack({{"n"}, std::to_string(i)});
    s.RemoveTrack({{"n"}, "never created"});
  }
  EXPECT_EQ(log.added.size(), 3u);
  EXPECT_EQ(log.removed.size(), 3u);
  EXPECT_TRUE(s.ListNamespaces().empty());
  s.RemoveNamespaceListener(&log);
}

}  // namespace
}  // namespace kvcs::moqt
