// etcd's Watch service (etcd/watch_hub.h) on a real Server over
// raft_fixture, in this process: live events as entries apply, replays from
// a past revision out of the history window, compaction and replaced states
// answered as etcd answers them, filters, prev_kv, cancel, progress, ids,
// and a stream that stops reading falling behind and catching up. The sink
// records what the transport would send (the gRPC and gateway transports
// are tested with etcdctl, tests/compat/test_etcdctl.py).
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "etcd/kv_service.h"
#include "etcd/proto_codec.h"
#include "etcd/watch_hub.h"
#include "inprocess/etcd_fixture.h"
#include "server/server.h"

namespace tenure::etcd {
namespace {

class RecordingSink final : public WatchSink {
 public:
  // `protobuf`: it takes SendEncoded, as gRPC's sink does: what comes that
  // way is decoded and recorded as Send's would be, after checking that
  // the bytes are exactly Send's encoding of it.
  RecordingSink(boost::asio::io_context& io, bool protobuf) : io_(io), protobuf_(protobuf) {}
  void Send(const WatchResponse& response) override { sent.push_back(response); }
  bool takes_protobuf() const override { return protobuf_; }
  void SendEncoded(std::string_view header, std::string_view watch_id,
                   std::string_view events) override {
    ASSERT_TRUE(protobuf_);
    const std::string bytes = std::string(header) + std::string(watch_id) + std::string(events);
    WatchResponse decoded;
    ASSERT_EQ(DecodeProto(bytes, &decoded), "");
    std::string canonical;
    EncodeProto(decoded, &canonical);
    EXPECT_EQ(bytes, canonical);
    sent.push_back(std::move(decoded));
    ++encoded_sends;
  }
  std::size_t unsent_bytes() const override { return unsent; }
  void OnDrained(std::function<void()> callback) override { drained_ = std::move(callback); }
  // The client read everything: the drain callback runs (posted).
  void Drain() {
    unsent = 0;
    if (drained_) boost::asio::post(io_, drained_);
  }
  // Every event sent to `watch_id`, as "PUT k=v@rev" / "DELETE k@rev".
  std::vector<std::string> EventsOf(std::int64_t watch_id) const {
    std::vector<std::string> out;
    for (const WatchResponse& r : sent) {
      if (r.body.watch_id != watch_id) continue;
      for (const Event& e : r.body.events) {
        out.push_back(e.type == EventType::kPut
                          ? "PUT " + e.kv.key + "=" + e.kv.value + "@" +
                                std::to_string(e.kv.mod_revision)
                          : "DELETE " + e.kv.key + "@" + std::to_string(e.kv.mod_revision));
      }
    }
    return out;
  }

  std::vector<WatchResponse> sent;
  std::size_t unsent = 0;
  std::size_t encoded_sends = 0;

 private:
  boost::asio::io_context& io_;
  const bool protobuf_;
  std::function<void()> drained_;
};

WatchRequest CreateRequest(state::KeyRange range, std::int64_t start = 0) {
  WatchRequest request;
  request.kind = WatchRequest::Kind::kCreate;
  request.create.range = std::move(range);
  request.create.start_revision = start;
  return request;
}

state::KeyRange Key(std::string key) { return {std::move(key), ""}; }
state::KeyRange Prefix(std::string prefix) {
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  return {std::move(prefix), std::move(end)};
}

// Every test twice: with a sink that takes only messages (the gateway's),
// and with one that takes the hub's shared encodings too (gRPC's).
class EtcdWatchTest : public inprocess::EtcdFixture, public ::testing::WithParamInterface<bool> {
 protected:
  void Start(std::size_t history_bytes, WatchHubOptions hub_options = {}) {
    StartServer(history_bytes);
    kv_ = std::make_unique<KvService>(*server_);
    hub_ = std::make_unique<WatchHub>(*server_, io_, hub_options);
    sink_ = std::make_unique<RecordingSink>(io_, GetParam());
    stream_ = std::make_unique<WatchStream>(*hub_, *sink_, client_);
  }
  void SetUp() override { Start(1 << 20); }
  void TearDown() override {
    stream_.reset();
    hub_.reset();
    kv_.reset();
    StopServer();
  }
  // A second start in one test replaces the first.
  void Restart(std::size_t history_bytes, WatchHubOptions hub_options = {}) {
    TearDown();
    Start(history_bytes, hub_options);
  }

  std::int64_t Put(std::string key, std::string value) {
    state::EtcdPutRequest put;
    put.key = std::move(key);
    put.value = std::move(value);
    std::optional<Answer<PutResponse>> got;
    kv_->Put(client_, std::move(put), [&got](Answer<PutResponse> a) { got = std::move(a); });
    EXPECT_TRUE(RunUntil([&got] { return got.has_value(); }));
    EXPECT_TRUE(got && got->error.ok());
    return got ? got->response.header.revision : 0;
  }
  std::int64_t Delete(std::string key) {
    state::EtcdDeleteRangeRequest del;
    del.range = Key(std::move(key));
    std::optional<Answer<DeleteRangeResponse>> got;
    kv_->DeleteRange(client_, std::move(del),
                     [&got](Answer<DeleteRangeResponse> a) { got = std::move(a); });
    EXPECT_TRUE(RunUntil([&got] { return got.has_value(); }));
    return got ? got->response.header.revision : 0;
  }
  void Compact(std::int64_t revision) {
    std::optional<Answer<CompactionResponse>> got;
    kv_->Compact(client_, {revision, false},
                 [&got](Answer<CompactionResponse> a) { got = std::move(a); });
    ASSERT_TRUE(RunUntil([&got] { return got.has_value(); }));
    ASSERT_TRUE(got->error.ok()) << got->error.message;
  }
  // Creates a watcher and returns its id from the created answer.
  std::int64_t Watch(WatchRequest request) {
    const std::size_t before = sink_->sent.size();
    stream_->Handle(request);
    EXPECT_GT(sink_->sent.size(), before);
    const WatchResponse& created = sink_->sent.at(before);
    EXPECT_TRUE(created.body.created);
    return created.body.watch_id;
  }
  std::int64_t Applied() const {
    return static_cast<std::int64_t>(server_->store().applied_index().value());
  }

  std::unique_ptr<KvService> kv_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<RecordingSink> sink_;
  std::unique_ptr<WatchStream> stream_;
};

TEST_P(EtcdWatchTest, ALiveWatcherGetsEachChangeOfItsRangeOnce) {
  const std::int64_t id = Watch(CreateRequest(Prefix("app/")));
  EXPECT_EQ(id, 0);  // etcd numbers a stream's watchers from 0
  EXPECT_EQ(sink_->sent[0].header.revision, Applied());
  const std::int64_t r1 = Put("app/a", "1");
  Put("other", "x");
  const std::int64_t r2 = Put("app/b", "2");
  const std::int64_t r3 = Delete("app/a");
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(id).size() == 3; }));
  EXPECT_EQ(sink_->EventsOf(id), (std::vector<std::string>{"PUT app/a=1@" + std::to_string(r1),
                                                           "PUT app/b=2@" + std::to_string(r2),
                                                           "DELETE app/a@" + std::to_string(r3)}));
  Settle();
  EXPECT_EQ(sink_->EventsOf(id).size(), 3u);
  // Live events went the shared way where the sink takes it.
  EXPECT_EQ(sink_->encoded_sends, GetParam() ? 3u : 0u);
  // A put's kv is the whole entry.
  const Event& put = sink_->sent[1].body.events.at(0);
  EXPECT_EQ(put.kv.create_revision, r1);
  EXPECT_EQ(put.kv.version, 1);
  EXPECT_FALSE(put.has_prev_kv);
}

// Many watchers of one key on several streams, with and without previous
// values: each gets its own id and the events as it asked for them (the
// hub encodes each distinct list once and shares it).
TEST_P(EtcdWatchTest, WatchersOfOneKeyOnManyStreamsEachGetTheirOwnAnswer) {
  Put("k", "0");
  std::vector<std::unique_ptr<RecordingSink>> sinks;
  std::vector<std::unique_ptr<WatchStream>> streams;
  for (int s = 0; s < 3; ++s) {
    sinks.push_back(std::make_unique<RecordingSink>(io_, GetParam()));
    streams.push_back(std::make_unique<WatchStream>(*hub_, *sinks.back(), client_));
    for (int w = 0; w < 2; ++w) {
      WatchRequest request = CreateRequest(Key("k"));
      request.create.prev_kv = w == 1;
      streams.back()->Handle(request);
    }
  }
  const std::int64_t r = Put("k", "1");
  ASSERT_TRUE(RunUntil([&] {
    for (const auto& sink : sinks) {
      if (sink->EventsOf(0).size() + sink->EventsOf(1).size() < 2) return false;
    }
    return true;
  }));
  for (const auto& sink : sinks) {
    for (std::int64_t id : {0, 1}) {
      EXPECT_EQ(sink->EventsOf(id), std::vector<std::string>{"PUT k=1@" + std::to_string(r)});
    }
    const WatchResponse& last = sink->sent.back();
    EXPECT_EQ(last.header.revision, r);
    for (const WatchResponse& answer : sink->sent) {
      if (answer.body.events.empty()) continue;
      const Event& event = answer.body.events.at(0);
      EXPECT_EQ(event.has_prev_kv, answer.body.watch_id == 1);
      if (event.has_prev_kv) {
        EXPECT_EQ(event.prev_kv.value, "0");
      }
    }
    EXPECT_EQ(sink->encoded_sends, GetParam() ? 2u : 0u);
  }
  streams.clear();
}

TEST_P(EtcdWatchTest, APastStartRevisionReplaysFromTheWindowThenGoesLive) {
  const std::int64_t r1 = Put("k", "1");
  const std::int64_t r2 = Put("k", "2");
  const std::int64_t id = Watch(CreateRequest(Key("k"), r1));
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(id).size() == 2; }));
  const std::int64_t r3 = Put("k", "3");
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(id).size() == 3; }));
  EXPECT_EQ(sink_->EventsOf(id), (std::vector<std::string>{"PUT k=1@" + std::to_string(r1),
                                                           "PUT k=2@" + std::to_string(r2),
                                                           "PUT k=3@" + std::to_string(r3)}));
  EXPECT_EQ(hub_->live_watchers(), 1u);
}

TEST_P(EtcdWatchTest, AFutureStartRevisionSkipsWhatComesBeforeIt) {
  const std::int64_t start = Applied() + 3;
  const std::int64_t id = Watch(CreateRequest(Key("k"), start));
  Put("k", "early");  // Applied()+1
  Put("k", "early");  // +2
  const std::int64_t r3 = Put("k", "first");
  ASSERT_EQ(r3, start);
  ASSERT_TRUE(RunUntil([&] { return !sink_->EventsOf(id).empty(); }));
  EXPECT_EQ(sink_->EventsOf(id), (std::vector<std::string>{"PUT k=first@" + std::to_string(r3)}));
}

TEST_P(EtcdWatchTest, ACompactedStartIsAnsweredWithTheCompactRevisionAndCanceled) {
  const std::int64_t r1 = Put("k", "1");
  Put("k", "2");
  const std::int64_t r3 = Put("k", "3");
  Compact(r3);
  const std::int64_t id = Watch(CreateRequest(Key("k"), r1));
  ASSERT_TRUE(RunUntil([&] { return sink_->sent.size() == 2; }));
  const WatchResponse& answer = sink_->sent[1];
  EXPECT_EQ(answer.body.watch_id, id);
  EXPECT_TRUE(answer.body.canceled);
  EXPECT_EQ(answer.body.compact_revision, r3);
  EXPECT_TRUE(answer.body.events.empty());
  EXPECT_EQ(stream_->watchers(), 0u);
  EXPECT_EQ(hub_->watchers(), 0u);
  // From the compact revision on, the replay is served.
  const std::int64_t again = Watch(CreateRequest(Key("k"), r3));
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(again).size() == 1; }));
}

TEST_P(EtcdWatchTest, FiltersAndPrevKvShapeTheEvents) {
  WatchRequest no_put = CreateRequest(Key("k"));
  no_put.create.filters = {WatchFilter::kNoPut};
  no_put.create.prev_kv = true;
  const std::int64_t deletes = Watch(no_put);
  WatchRequest no_delete = CreateRequest(Key("k"));
  no_delete.create.filters = {WatchFilter::kNoDelete};
  no_delete.create.prev_kv = true;
  const std::int64_t puts = Watch(no_delete);
  Put("k", "1");
  Put("k", "2");
  Delete("k");
  ASSERT_TRUE(RunUntil(
      [&] { return sink_->EventsOf(deletes).size() == 1 && sink_->EventsOf(puts).size() == 2; }));
  for (const WatchResponse& r : sink_->sent) {
    for (const Event& e : r.body.events) {
      if (r.body.watch_id == deletes) {
        EXPECT_EQ(e.type, EventType::kDelete);
        ASSERT_TRUE(e.has_prev_kv);
        EXPECT_EQ(e.prev_kv.value, "2");
      } else if (e.kv.value == "1") {
        EXPECT_FALSE(e.has_prev_kv);  // a create has no previous version
      } else {
        ASSERT_TRUE(e.has_prev_kv);
        EXPECT_EQ(e.prev_kv.value, "1");
      }
    }
  }
}

TEST_P(EtcdWatchTest, CancelAnswersOnceAndStopsEvents) {
  const std::int64_t id = Watch(CreateRequest(Key("k")));
  WatchRequest cancel;
  cancel.kind = WatchRequest::Kind::kCancel;
  cancel.cancel.watch_id = id;
  stream_->Handle(cancel);
  ASSERT_EQ(sink_->sent.size(), 2u);
  EXPECT_TRUE(sink_->sent[1].body.canceled);
  EXPECT_EQ(sink_->sent[1].body.watch_id, id);
  stream_->Handle(cancel);  // unknown now: etcd answers nothing
  EXPECT_EQ(sink_->sent.size(), 2u);
  Put("k", "1");
  Settle();
  EXPECT_TRUE(sink_->EventsOf(id).empty());
  EXPECT_EQ(hub_->watchers(), 0u);
}

TEST_P(EtcdWatchTest, IdsAreNumberedOrChosenAndDuplicatesAndEmptyRangesRefused) {
  EXPECT_EQ(Watch(CreateRequest(Key("a"))), 0);
  WatchRequest chosen = CreateRequest(Key("b"));
  chosen.create.watch_id = 7;
  EXPECT_EQ(Watch(chosen), 7);
  const std::int64_t refused = Watch(chosen);
  EXPECT_EQ(refused, -1);
  EXPECT_TRUE(sink_->sent.back().body.canceled);
  EXPECT_EQ(sink_->sent.back().body.cancel_reason,
            "mvcc: duplicate watch ID provided on the WatchStream");
  EXPECT_EQ(Watch(CreateRequest({"b", "a"})), -1);
  EXPECT_EQ(sink_->sent.back().body.cancel_reason, "mvcc: watcher range is empty");
  EXPECT_EQ(Watch(CreateRequest(Key("c"))), 1);
  EXPECT_EQ(stream_->watchers(), 3u);
}

TEST_P(EtcdWatchTest, AProgressRequestAnswersTheRevisionForTheWholeStream) {
  Put("k", "1");
  WatchRequest progress;
  progress.kind = WatchRequest::Kind::kProgress;
  stream_->Handle(progress);
  ASSERT_EQ(sink_->sent.size(), 1u);
  EXPECT_EQ(sink_->sent[0].body.watch_id, -1);
  EXPECT_EQ(sink_->sent[0].header.revision, Applied());
}

TEST_P(EtcdWatchTest, ProgressNotificationsGoToQuietWatchersThatAskedForThem) {
  WatchHubOptions options;
  options.progress_interval_ms = 50;
  Restart(1 << 20, options);
  WatchRequest asked = CreateRequest(Key("quiet"));
  asked.create.progress_notify = true;
  const std::int64_t id = Watch(asked);
  const std::int64_t silent = Watch(CreateRequest(Key("quiet")));
  auto progress_answers = [&](std::int64_t watch_id) {
    int n = 0;
    for (const WatchResponse& r : sink_->sent) {
      if (r.body.watch_id == watch_id && !r.body.created && r.body.events.empty()) ++n;
    }
    return n;
  };
  ASSERT_TRUE(RunUntil([&] { return progress_answers(id) >= 2; }));
  EXPECT_EQ(progress_answers(silent), 0);
  EXPECT_EQ(sink_->sent.back().header.revision, Applied());
}

TEST_P(EtcdWatchTest, AStreamThatStopsReadingFallsBehindAndCatchesUpFromTheWindow) {
  const std::int64_t id = Watch(CreateRequest(Key("k")));
  sink_->unsent = limits::kEtcdWatchUnsentBytes + 1;  // the client stopped reading
  std::vector<std::string> want;
  for (int i = 0; i < 5; ++i) {
    const std::string v = std::to_string(i);
    want.push_back("PUT k=" + v + "@" + std::to_string(Put("k", v)));
  }
  Settle();
  EXPECT_TRUE(sink_->EventsOf(id).empty());
  EXPECT_EQ(hub_->live_watchers(), 0u);
  sink_->Drain();
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(id).size() == 5; }));
  EXPECT_EQ(sink_->EventsOf(id), want);
  EXPECT_EQ(hub_->live_watchers(), 1u);
  const std::int64_t later = Put("k", "live");
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(id).size() == 6; }));
  EXPECT_EQ(sink_->EventsOf(id).back(), "PUT k=live@" + std::to_string(later));
}

TEST_P(EtcdWatchTest, WithoutAWindowAStreamThatFellBehindIsAnsweredCompacted) {
  Restart(0);
  const std::int64_t id = Watch(CreateRequest(Key("k")));
  Put("k", "0");  // live: served without any window
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(id).size() == 1; }));
  sink_->unsent = limits::kEtcdWatchUnsentBytes + 1;
  Put("k", "1");
  Settle();
  sink_->Drain();
  ASSERT_TRUE(RunUntil([&] { return sink_->sent.back().body.canceled; }));
  EXPECT_GT(sink_->sent.back().body.compact_revision, 0);
  EXPECT_EQ(hub_->watchers(), 0u);
}

TEST_P(EtcdWatchTest, AReplayComesInAnswersOfWholeRevisions) {
  const std::int64_t start = Applied() + 1;
  const int puts = static_cast<int>(limits::kEtcdWatchEventsPerAnswer) + 10;
  for (int i = 0; i < puts; ++i) Put("k", std::to_string(i));
  const std::int64_t id = Watch(CreateRequest(Key("k"), start));
  ASSERT_TRUE(
      RunUntil([&] { return sink_->EventsOf(id).size() == static_cast<std::size_t>(puts); }));
  std::size_t answers = 0;
  for (const WatchResponse& r : sink_->sent) {
    if (r.body.watch_id != id || r.body.events.empty()) continue;
    ++answers;
    EXPECT_LE(r.body.events.size(), limits::kEtcdWatchEventsPerAnswer);
  }
  EXPECT_EQ(answers, 2u);
}

// The answers the shared encodings do not make go the message way, live
// too: a watcher that asked for fragments, and a batch of more events than
// one answer holds (a revision is never cut: one answer of all of them).
TEST_P(EtcdWatchTest, FragmentsAndLargeBatchesGoTheMessageWay) {
  const int keys = static_cast<int>(limits::kEtcdWatchEventsPerAnswer) + 1;
  for (int i = 0; i < keys; ++i) Put("p/" + std::to_string(i), "v");
  const std::int64_t prefix = Watch(CreateRequest(Prefix("p/")));
  WatchRequest fragmented = CreateRequest(Key("f"));
  fragmented.create.fragment = true;
  const std::int64_t fragment = Watch(fragmented);
  const std::size_t shared_before = sink_->encoded_sends;

  const std::int64_t r = Put("f", "1");
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(fragment).size() == 1; }));
  EXPECT_EQ(sink_->EventsOf(fragment), std::vector<std::string>{"PUT f=1@" + std::to_string(r)});

  state::EtcdDeleteRangeRequest del;
  del.range = Prefix("p/");
  std::optional<Answer<DeleteRangeResponse>> got;
  kv_->DeleteRange(client_, std::move(del),
                   [&got](Answer<DeleteRangeResponse> a) { got = std::move(a); });
  ASSERT_TRUE(RunUntil([&got] { return got.has_value(); }));
  ASSERT_TRUE(
      RunUntil([&] { return sink_->EventsOf(prefix).size() == static_cast<std::size_t>(keys); }));
  std::size_t answers = 0;
  for (const WatchResponse& answer : sink_->sent) {
    if (answer.body.watch_id == prefix && !answer.body.events.empty()) ++answers;
  }
  EXPECT_EQ(answers, 1u);
  EXPECT_EQ(sink_->encoded_sends, shared_before);
}

TEST_P(EtcdWatchTest, AReplacedStateCancelsWatchersThatMissedChanges) {
  const std::int64_t behind = Watch(CreateRequest(Key("k")));
  sink_->unsent = limits::kEtcdWatchUnsentBytes + 1;
  Put("k", "missed");
  std::string snapshot;
  server_->store().EncodeSnapshot(&snapshot);
  sink_->unsent = 0;
  std::optional<Status> restored;
  server_->Propose(state::RestoreState{snapshot}, [&restored](Result<state::ApplyResult> r) {
    restored = r.ok() ? r->status : r.status();
  });
  ASSERT_TRUE(RunUntil([&] { return restored.has_value(); }));
  ASSERT_TRUE(restored->ok()) << restored->message();
  ASSERT_TRUE(RunUntil([&] { return hub_->watchers() == 0; }));
  EXPECT_TRUE(sink_->sent.back().body.canceled);
  EXPECT_EQ(sink_->sent.back().body.watch_id, behind);
  // A watcher made after the replacement is served.
  const std::int64_t fresh = Watch(CreateRequest(Key("k")));
  Put("k", "after");
  ASSERT_TRUE(RunUntil([&] { return sink_->EventsOf(fresh).size() == 1; }));
}

TEST_P(EtcdWatchTest, ClosingAStreamForgetsItsWatchers) {
  Watch(CreateRequest(Key("a")));
  Watch(CreateRequest(Prefix("b/")));
  EXPECT_EQ(hub_->watchers(), 2u);
  stream_.reset();
  EXPECT_EQ(hub_->watchers(), 0u);
  EXPECT_EQ(hub_->live_watchers(), 0u);
  Put("a", "1");  // nothing left to tell
}

INSTANTIATE_TEST_SUITE_P(Sinks, EtcdWatchTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "SharedProtobuf" : "Messages";
                         });

}  // namespace
}  // namespace tenure::etcd
