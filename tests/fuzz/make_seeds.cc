// Writes the binary seeds of the command and snapshot fuzz targets from the
// random histories the state tests use (unit/state/random_commands.h): raft
// entries of every command kind, and snapshots of the stores they build; and
// of the snapshot and backup_file targets from the forged states: their base
// and those that break one limit each (unit/state/forged_states.h; the small
// ones).
// Usage: fuzz_make_seeds CORPUS_DIR
//   (writes CORPUS_DIR/{command,snapshot,backup_file}/)
// And the zk_jute target's: the frames kazoo's lock recipe and Curator's
// mutex send (decision 0056), a multi, setWatches2 and connect requests.
// scripts/fuzz -seeds runs it; its output is committed in tests/fuzz/corpus.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "etcd/grpc_wire.h"
#include "etcd/json_codec.h"
#include "etcd/messages_services.h"
#include "etcd/proto_codec.h"
#include "raft/entry_codec.h"
#include "state/backup_file.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "unit/state/forged_states.h"
#include "unit/state/random_commands.h"
#include "zk/request.h"

namespace {

void Write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// zk_jute: first byte 0 and a request frame, 1 and a connect request.
void WriteZkSeeds(const std::filesystem::path& dir) {
  using namespace tenure::zk;
  std::filesystem::create_directories(dir);
  const auto op = [](OpCode code) { return static_cast<std::int32_t>(code); };
  const std::vector<Acl> open = {{kPermAll, {"world", "anyone"}}};
  const std::vector<std::pair<std::string, std::pair<OpCode, RequestBody>>> frames = {
      {"ping", {OpCode::kPing, NoBody{}}},
      {"close", {OpCode::kCloseSession, NoBody{}}},
      {"exists-watch", {OpCode::kExists, PathWatchRequest{"/election", true}}},
      {"create", {OpCode::kCreate, CreateRequest{"/election", "", open, 0, -1}}},
      {"create-ephemeral-sequential",
       {OpCode::kCreate, CreateRequest{"/election/abc__lock__", "me", open, 3, -1}}},
      {"create2", {OpCode::kCreate2, CreateRequest{"/lock/_c_x-lock-", "", open, 3, -1}}},
      {"create-container", {OpCode::kCreateContainer, CreateRequest{"/lock", "", open, 4, -1}}},
      {"get-children", {OpCode::kGetChildren, PathWatchRequest{"/election", false}}},
      {"get-children2", {OpCode::kGetChildren2, PathWatchRequest{"/lock", false}}},
      {"get-data-watch", {OpCode::kGetData, PathWatchRequest{"/election/n_0000000001", true}}},
      {"set-data", {OpCode::kSetData, SetDataRequest{"/config", "v2", 1}}},
      {"delete", {OpCode::kDelete, PathVersionRequest{"/election/n_0000000002", -1}}},
      {"remove-watches", {OpCode::kRemoveWatches, PathModeRequest{"/lock/x", 3}}},
      {"add-watch", {OpCode::kAddWatch, PathModeRequest{"/", 1}}},
      {"sync", {OpCode::kSync, PathRecord{"/"}}},
      {"auth", {OpCode::kAuth, AuthPacket{0, "digest", "user:pass"}}},
      {"set-acl", {OpCode::kSetAcl, SetAclRequest{"/a", open, -1}}},
  };
  for (const auto& [name, request] : frames) {
    Write(dir / name, std::string(1, '\0') + EncodeRequest({1, op(request.first)}, request.second));
  }
  MultiRequest multi;
  multi.ops.push_back({op(OpCode::kCheck), PathVersionRequest{"/a", 0}});
  multi.ops.push_back({op(OpCode::kCreate), CreateRequest{"/a/b", "x", open, 2, -1}});
  multi.ops.push_back({op(OpCode::kSetData), SetDataRequest{"/a", "y", -1}});
  multi.ops.push_back({op(OpCode::kDelete), PathVersionRequest{"/a/c", -1}});
  Write(dir / "multi", std::string(1, '\0') + EncodeRequest({2, op(OpCode::kMulti)}, multi));
  SetWatches2 watches;
  watches.relative_zxid = 100;
  watches.data_watches = {"/a"};
  watches.exist_watches = {"/b"};
  watches.child_watches = {"/"};
  watches.persistent_recursive_watches = {"/r"};
  Write(dir / "set-watches2",
        std::string(1, '\0') + EncodeRequest({kSetWatchesXid, op(OpCode::kSetWatches2)}, watches));
  // A connection's bytes after its connect: three framed requests.
  std::string stream(1, '\2');
  for (const char* name : {"exists-watch", "create-ephemeral-sequential", "ping"}) {
    for (const auto& [seed_name, request] : frames) {
      if (seed_name != name) continue;
      const std::string frame = EncodeRequest({3, op(request.first)}, request.second);
      const auto n = static_cast<std::uint32_t>(frame.size());
      for (int shift = 24; shift >= 0; shift -= 8) {
        stream.push_back(static_cast<char>((n >> shift) & 0xff));
      }
      stream += frame;
    }
  }
  Write(dir / "stream", stream);
  for (const auto& [name, path] : std::vector<std::pair<std::string, std::string>>{
           {"path-lock", "/locks/l1/8f2e__lock__0000000007"},
           {"path-relative", "/a/../b"},
           {"path-utf8", "/\xc3\xa9t\xc3\xa9"}}) {
    Write(dir / name, "\3" + path);
  }
  ConnectRequest connect{0, 0, 10000, 0, std::string(16, '\0'), false};
  Write(dir / "connect-new", std::string(1, '\1') + EncodeRecord(connect));
  connect = {0, 77, 30000, 0x1234567890abcdef, "0123456789abcdef", std::nullopt};
  Write(dir / "connect-resume-old-client", std::string(1, '\1') + EncodeRecord(connect));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  const std::filesystem::path root(argv[1]);
  std::filesystem::create_directories(root / "command");
  std::filesystem::create_directories(root / "snapshot");
  std::filesystem::create_directories(root / "etcd_proto");
  WriteZkSeeds(root / "zk_jute");
  int entries = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    tenure::state::testutil::CommandGenerator generator(seed);
    tenure::state::testutil::ModelStore model;
    tenure::state::Store store;
    tenure::LogIndex index;
    for (int step = 0; step < 60; ++step) {
      const tenure::state::Command command = generator.Next(model);
      index = index.Next();
      (void)store.Apply(command, index);
      (void)model.Apply(command, index);
      if (step % 4 == 0) {
        std::string entry;
        tenure::raft::EncodeEntry(command, &entry);
        Write(root / "command" / ("seed" + std::to_string(seed) + "-" + std::to_string(step)),
              entry);
        ++entries;
      }
    }
    // The snapshot target's first byte: 1 = "append the checksum for me".
    std::string snapshot;
    store.EncodeSnapshot(&snapshot);
    // A restore of that state, as the command target's entry.
    tenure::state::Command restore;
    restore.now_ms = tenure::ClusterMs(5000);
    restore.body = tenure::state::RestoreState{snapshot};
    std::string restore_entry;
    tenure::raft::EncodeEntry(restore, &restore_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-restore"), restore_entry);
    // The same state's first chunk and its swap (decision 0050).
    tenure::state::Command chunk = restore;
    chunk.body = tenure::state::RestoreChunk{seed, 0, snapshot.size(), snapshot.substr(0, 512)};
    std::string chunk_entry;
    tenure::raft::EncodeEntry(chunk, &chunk_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-restore-chunk"), chunk_entry);
    tenure::state::Command staged = restore;
    staged.body = tenure::state::RestoreStaged{seed, snapshot.size()};
    std::string staged_entry;
    tenure::raft::EncodeEntry(staged, &staged_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-restore-staged"), staged_entry);
    // An etcd recipe's campaign (decision 0048): CREATE(k) == 0 ? Put(k,
    // lease) : Range(k), with a nested txn and a delete.
    tenure::state::EtcdTxnRequest campaign;
    tenure::state::EtcdCompare absent;
    absent.target = tenure::state::EtcdCompareTarget::kCreate;
    absent.range.key = "election/" + std::to_string(seed);
    campaign.compare.push_back(absent);
    tenure::state::EtcdRequestOp put;
    put.kind = tenure::state::EtcdRequestOp::Kind::kPut;
    put.put.key = absent.range.key;
    put.put.value = "candidate";
    put.put.lease = static_cast<std::int64_t>(seed);
    put.put.prev_kv = true;
    tenure::state::EtcdRequestOp get;
    get.kind = tenure::state::EtcdRequestOp::Kind::kRange;
    get.range.range.key = absent.range.key;
    tenure::state::EtcdRequestOp erase;
    erase.kind = tenure::state::EtcdRequestOp::Kind::kDeleteRange;
    erase.delete_range.range = tenure::state::KeyRange{"a", "b"};
    tenure::state::EtcdTxnRequest inner;
    inner.success.push_back(get);
    inner.failure.push_back(erase);
    tenure::state::EtcdRequestOp nested;
    nested.kind = tenure::state::EtcdRequestOp::Kind::kTxn;
    nested.txn.push_back(inner);
    campaign.success = {put, nested};
    campaign.failure = {get};
    tenure::state::Command etcd = restore;
    etcd.body = tenure::state::EtcdTxn{campaign};
    std::string etcd_entry;
    tenure::raft::EncodeEntry(etcd, &etcd_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-etcd-txn"), etcd_entry);
    // The same txn as a client sends it (etcd_proto: first byte 0, a txn),
    // and its answer (first byte 5).
    std::string proto(1, '\0');
    tenure::etcd::EncodeProto(campaign, &proto);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-txn"), proto);
    tenure::etcd::TxnResponse answer;
    answer.header = {1, 2, static_cast<std::int64_t>(seed), 3};
    answer.body.succeeded = true;
    answer.body.responses.emplace_back().kind = tenure::state::EtcdRequestOp::Kind::kPut;
    answer.body.responses.back().put.has_prev_kv = true;
    answer.body.responses.back().put.prev_kv = {"k", 1, 2, 3, "v", 4};
    answer.body.responses.back().revision = static_cast<std::int64_t>(seed);
    std::string response(1, '\5');
    tenure::etcd::EncodeProto(answer, &response);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-txn-response"), response);
    // The txn twice on a gRPC stream, in reads of 7 bytes (first byte 12).
    std::string framed;
    tenure::etcd::AppendGrpcMessage(&framed, proto.substr(1));
    tenure::etcd::AppendGrpcMessage(&framed, proto.substr(1));
    std::string stream(1, '\14');
    for (std::size_t at = 0; at < framed.size(); at += 7) {
      stream.push_back('\6');  // a read of 1 + 6 % 64 bytes
      stream.append(framed.substr(at, 7));
    }
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-grpc-stream"), stream);
    std::string json(1, '\6');
    tenure::etcd::EncodeJson(campaign, &json);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-txn-json"), json);
    std::string json_response(1, '\13');
    tenure::etcd::EncodeJson(answer, &json_response);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-txn-response-json"),
          json_response);
    // A gateway keep-alive body of two requests (first byte 13).
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-keepalive-json"),
          "\15{\"ID\": \"" + std::to_string(seed) + "\"}\n{\"ID\": 7, \"keys\": true}");
    // A watch of the campaign's prefix from a past revision, as etcdctl
    // and the concurrency package create one (first byte 4 in protobuf,
    // 10 in JSON), and its cancel.
    tenure::etcd::WatchRequest watch;
    watch.kind = tenure::etcd::WatchRequest::Kind::kCreate;
    watch.create.range = {"/election/", "/election0"};
    watch.create.start_revision = static_cast<std::int64_t>(seed);
    watch.create.prev_kv = seed % 2 == 0;
    if (seed % 3 == 0) watch.create.filters = {tenure::etcd::WatchFilter::kNoPut};
    std::string watch_proto(1, '\4');
    tenure::etcd::EncodeProto(watch, &watch_proto);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-watch"), watch_proto);
    std::string watch_json(1, '\12');
    tenure::etcd::EncodeJson(watch, &watch_json);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-watch-json"), watch_json);
    tenure::etcd::WatchRequest cancel;
    cancel.kind = tenure::etcd::WatchRequest::Kind::kCancel;
    cancel.cancel.watch_id = static_cast<std::int64_t>(seed);
    std::string cancel_proto(1, '\4');
    tenure::etcd::EncodeProto(cancel, &cancel_proto);
    Write(root / "etcd_proto" / ("seed" + std::to_string(seed) + "-watch-cancel"), cancel_proto);
    tenure::state::Command compact = restore;
    compact.body = tenure::state::EtcdCompact{tenure::LogIndex(seed)};
    std::string compact_entry;
    tenure::raft::EncodeEntry(compact, &compact_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-etcd-compact"), compact_entry);
    // A ZooKeeper multi of every op kind and mode (ZkWrite, decision 0056).
    tenure::state::Command zk_write = restore;
    zk_write.body = tenure::state::ZkWrite{
        tenure::state::NumberedSessionId(static_cast<std::int64_t>(seed)),
        {{tenure::state::ZkOp::Kind::kCreate, "/lock/n-", "me", -1, true, true, false},
         {tenure::state::ZkOp::Kind::kSetData, "/lock", "d", static_cast<std::int32_t>(seed), false,
          false, false},
         {tenure::state::ZkOp::Kind::kCheck, "/lock", "", 0, false, false, false},
         {tenure::state::ZkOp::Kind::kDelete, "/old", "", -1, false, false, false},
         {tenure::state::ZkOp::Kind::kCreate, "/c", "", -1, false, false, true}}};
    std::string zk_entry;
    tenure::raft::EncodeEntry(zk_write, &zk_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-zk-write"), zk_entry);
    // setACL (op kind 4) and a member with a ZooKeeper address (tag 35).
    tenure::state::Command zk_set_acl = restore;
    zk_set_acl.body =
        tenure::state::ZkWrite{tenure::state::SessionId(),
                               {{tenure::state::ZkOp::Kind::kSetAcl, "/lock", "",
                                 static_cast<std::int32_t>(seed), false, false, false}}};
    std::string set_acl_entry;
    tenure::raft::EncodeEntry(zk_set_acl, &set_acl_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-zk-set-acl"), set_acl_entry);
    tenure::state::Command zk_member = restore;
    zk_member.body = tenure::state::SetMember{{seed, "n" + std::to_string(seed), "127.0.0.1:8300",
                                               "127.0.0.1:8500", "", "tls://127.0.0.1:2281",
                                               tenure::LogIndex()}};
    std::string member_entry;
    tenure::raft::EncodeEntry(zk_member, &member_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-set-member-zk"), member_entry);
    tenure::state::Command zk_secret = restore;
    zk_secret.body = tenure::state::ZkSecret{std::string(32, static_cast<char>(seed))};
    std::string secret_entry;
    tenure::raft::EncodeEntry(zk_secret, &secret_entry);
    Write(root / "command" / ("seed" + std::to_string(seed) + "-zk-secret"), secret_entry);
    Write(root / "snapshot" / ("seed" + std::to_string(seed) + "-whole"),
          std::string(1, 0) + snapshot);
    snapshot.resize(snapshot.size() - 4);
    Write(root / "snapshot" / ("seed" + std::to_string(seed) + "-body"),
          std::string(1, 1) + snapshot);
  }
  // The state the forged ones start from: keys at versions above 1 (snapshot
  // version 8), ACL state, a lock history and a queue.
  std::filesystem::create_directories(root / "backup_file");
  {
    const tenure::state::Store base = tenure::state::testutil::ForgedBase();
    std::string snapshot;
    base.EncodeSnapshot(&snapshot);
    Write(root / "snapshot" / "forged-base-whole", std::string(1, 0) + snapshot);
    snapshot.resize(snapshot.size() - 4);
    Write(root / "snapshot" / "forged-base-body", std::string(1, 1) + snapshot);
    Write(root / "backup_file" / "forged-base",
          std::string(1, 0) + tenure::state::EncodeBackup(base, 3, tenure::UnixMs(5)));
    // The same state compacted (EtcdCompact): snapshot version 9.
    tenure::state::Store compacted = tenure::state::testutil::ForgedBase();
    const tenure::LogIndex revision(base.applied_index().value() - 1);
    compacted.Apply({tenure::ClusterMs(5), tenure::state::EtcdCompact{revision}},
                    base.applied_index().Next());
    snapshot.clear();
    compacted.EncodeSnapshot(&snapshot);
    Write(root / "snapshot" / "forged-base-compacted-whole", std::string(1, 0) + snapshot);
    // The same state with ZooKeeper's node records: snapshot version 11.
    tenure::state::Store zk = tenure::state::testutil::ForgedBase();
    zk.Apply({tenure::ClusterMs(5),
              tenure::state::ZkWrite{
                  tenure::state::SessionId(),
                  {{tenure::state::ZkOp::Kind::kCreate, "/z", "", -1, false, false, true},
                   {tenure::state::ZkOp::Kind::kCreate, "/z/n-", "x", -1, false, true, false}}}},
             base.applied_index().Next());
    snapshot.clear();
    zk.EncodeSnapshot(&snapshot);
    Write(root / "snapshot" / "forged-base-zk-whole", std::string(1, 0) + snapshot);
    // And with the session secret: snapshot version 12.
    zk.Apply({tenure::ClusterMs(5), tenure::state::ZkSecret{std::string(32, 'k')}},
             base.applied_index().Next().Next());
    snapshot.clear();
    zk.EncodeSnapshot(&snapshot);
    Write(root / "snapshot" / "forged-base-zk-secret-whole", std::string(1, 0) + snapshot);
    // And a member with a ZooKeeper address: snapshot version 13.
    zk.Apply({tenure::ClusterMs(5),
              tenure::state::SetMember{{1, "n1", "127.0.0.1:8300", "127.0.0.1:8500",
                                        "127.0.0.1:2379", "127.0.0.1:2181", tenure::LogIndex()}}},
             base.applied_index().Next().Next().Next());
    snapshot.clear();
    zk.EncodeSnapshot(&snapshot);
    Write(root / "snapshot" / "forged-base-zk-member-whole", std::string(1, 0) + snapshot);
  }
  // Refused states, each with the bytes as they are (first byte 0).
  int forged = 0;
  for (const tenure::state::testutil::Forged& c : tenure::state::testutil::ForgedCases()) {
    const tenure::state::Store store = tenure::state::testutil::ForgedState(c);
    std::string snapshot;
    store.EncodeSnapshot(&snapshot);
    if (snapshot.size() > 16 * 1024) continue;  // seeds stay small
    Write(root / "snapshot" / ("refused-" + c.name), std::string(1, 0) + snapshot);
    Write(root / "backup_file" / ("refused-" + c.name),
          std::string(1, 0) + tenure::state::EncodeBackup(store, 3, tenure::UnixMs(5)));
    ++forged;
  }
  std::printf("wrote %d command seeds, 19 snapshot seeds and %d refused states under %s\n", entries,
              forged, argv[1]);
  return 0;
}
