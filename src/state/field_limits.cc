#include "state/field_limits.h"

#include <type_traits>

#include "common/duration.h"
#include "common/limits.h"
#include "common/strings.h"
#include "state/etcd_check.h"
#include "state/numbered_session.h"

namespace tenure::state {
namespace {

constexpr std::size_t kQuotedBytesMax = 64;

Status Invalid(std::string message) { return Status::InvalidArgument(std::move(message)); }

std::string N(std::uint64_t n) { return std::to_string(n); }

// A staged restore names its restore and a size a restore file may have.
Status CheckRestoreTotal(std::uint64_t restore_id, std::uint64_t total) {
  if (restore_id == 0) return Invalid("snapshot restore refused: restore id 0");
  if (total == 0 || total > limits::kSnapshotBytesMax) {
    return Invalid("snapshot restore refused: a state of " + N(total) + " bytes is outside [1, " +
                   N(limits::kSnapshotBytesMax) + "]");
  }
  return Status::Ok();
}

// A chunk of at most kRestoreChunkBytesMax, not empty, inside its total.
Status CheckRestoreChunk(const RestoreChunk& c) {
  TENURE_RETURN_IF_ERROR(CheckRestoreTotal(c.restore_id, c.total));
  if (c.bytes.empty() || c.bytes.size() > limits::kRestoreChunkBytesMax || c.offset > c.total ||
      c.bytes.size() > c.total - c.offset) {
    return Invalid("snapshot restore refused: a chunk of " + N(c.bytes.size()) +
                   " bytes at offset " + N(c.offset) + " of " + N(c.total) + " (at most " +
                   N(limits::kRestoreChunkBytesMax) + " each)");
  }
  return Status::Ok();
}

Status CheckCount(std::string_view session, std::string_view field, std::size_t count) {
  if (count <= limits::kSessionChecksMax) return Status::Ok();
  return Invalid("session " + std::string(session) + ": " + N(count) + " " + std::string(field) +
                 ", more than the " + N(limits::kSessionChecksMax) + " allowed");
}

Status CheckCheckId(std::string_view session, std::string_view id) {
  if (id.size() <= limits::kSessionNameBytesMax) return Status::Ok();
  return Invalid("session " + std::string(session) + ": check id " + QuoteCut(id) + " is " +
                 N(id.size()) + " bytes, longer than the " + N(limits::kSessionNameBytesMax) +
                 " allowed");
}

}  // namespace

std::string QuoteCut(std::string_view text) {
  if (text.size() <= kQuotedBytesMax) return GoQuote(text);
  return GoQuote(text.substr(0, kQuotedBytesMax)) + "\xE2\x80\xA6";  // U+2026
}

Status CheckKeySize(std::string_view what, std::string_view key) {
  if (key.size() <= limits::kKvKeyBytesMax) return Status::Ok();
  return Invalid(std::string(what) + " " + QuoteCut(key) + " is " + N(key.size()) +
                 " bytes, longer than the " + N(limits::kKvKeyBytesMax) + " allowed");
}

Status CheckValueSize(std::string_view key, std::string_view value) {
  if (value.size() <= limits::kKvValueBytesMax) return Status::Ok();
  return Invalid("key " + QuoteCut(key) + ": value of " + N(value.size()) +
                 " bytes is larger than the " + N(limits::kKvValueBytesMax) + " allowed");
}

bool IsUnixMsInRange(UnixMs time) { return time.ms() >= 0 && time.ms() <= limits::kUnixMsMax; }

Status CheckUnixMs(std::string_view what, UnixMs time) {
  if (IsUnixMsInRange(time)) return Status::Ok();
  return Invalid(std::string(what) + " " + std::to_string(time.ms()) +
                 " ms is outside the years 1970 to 9999");
}

bool IsClusterMsInRange(ClusterMs time) {
  return time.ms() >= 0 && time.ms() <= limits::kUnixMsMax;
}

Status CheckClusterMs(std::string_view what, ClusterMs time) {
  if (IsClusterMsInRange(time)) return Status::Ok();
  return Invalid(std::string(what) + " " + std::to_string(time.ms()) + " ms is outside [0, " +
                 std::to_string(limits::kUnixMsMax) + "]");
}

Status CheckSessionFields(const Session& s) {
  const std::string_view id = s.id.view();
  // Empty is "no session" everywhere else (an unlocked key's holder). Any
  // other id is kept as it is (decision 0033), though the leader makes UUIDs.
  if (id.empty()) return Invalid("a session has an empty id");
  const std::string quoted = QuoteCut(id);
  for (const auto& [field, text] :
       {std::pair<std::string_view, std::string_view>{"Name", s.name}, {"Node", s.node}}) {
    if (text.size() > limits::kSessionNameBytesMax) {
      return Invalid("session " + quoted + ": " + std::string(field) + " of " + N(text.size()) +
                     " bytes is longer than the " + N(limits::kSessionNameBytesMax) + " allowed");
    }
  }
  static_assert(limits::kSessionTtlMinNs == 10 * kNsPerSecond &&
                    limits::kSessionTtlMaxNs == 24 * 3600 * kNsPerSecond &&
                    limits::kLeaseTtlMinNs == 2 * kNsPerSecond &&
                    limits::kLeaseTtlMaxSeconds == 9'000'000'000,
                "the messages below name the ranges");
  // An etcd lease (a numbered session) has etcd's TTL range, with a TTL.
  if (IsNumberedSession(s.id)) {
    if (s.ttl_ns < limits::kLeaseTtlMinNs || s.ttl_ns > limits::kLeaseTtlMaxNs) {
      return Invalid("lease session " + quoted + ": TTL " + std::to_string(s.ttl_ns) +
                     " ns is outside [2s, 9000000000s]");
    }
  } else if (s.ttl_ns != 0 &&
             (s.ttl_ns < limits::kSessionTtlMinNs || s.ttl_ns > limits::kSessionTtlMaxNs)) {
    return Invalid("session " + quoted + ": TTL " + std::to_string(s.ttl_ns) +
                   " ns is outside [10s, 24h]");
  }
  // The TTL as the client wrote it is what the API shows: it must say the
  // duration the timers use ("" for none, as the live API stores it).
  const Result<DurationNs> written = ParseGoDuration(s.ttl);
  if (s.ttl_ns == 0 ? !s.ttl.empty() : !written.ok() || *written != s.ttl_ns) {
    return Invalid("session " + quoted + ": TTL text " + QuoteCut(s.ttl) + " does not say its " +
                   std::to_string(s.ttl_ns) + " ns");
  }
  TENURE_RETURN_IF_ERROR(CheckCount(quoted, "NodeChecks", s.checks.node().size()));
  TENURE_RETURN_IF_ERROR(CheckCount(quoted, "ServiceChecks", s.checks.service().size()));
  TENURE_RETURN_IF_ERROR(CheckCount(quoted, "Checks", s.checks.legacy().size()));
  for (const std::string& check : s.checks.node())
    TENURE_RETURN_IF_ERROR(CheckCheckId(quoted, check));
  for (const ServiceCheck& check : s.checks.service()) {
    TENURE_RETURN_IF_ERROR(CheckCheckId(quoted, check.id));
    TENURE_RETURN_IF_ERROR(CheckCheckId(quoted, check.ns));
  }
  for (const std::string& check : s.checks.legacy())
    TENURE_RETURN_IF_ERROR(CheckCheckId(quoted, check));
  return Status::Ok();
}

Status CheckCommandFields(const CommandBody& body) {
  return std::visit(
      [](const auto& c) -> Status {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, KvSet> || std::is_same_v<T, KvCas> ||
                      std::is_same_v<T, KvAcquire> || std::is_same_v<T, KvRelease> ||
                      std::is_same_v<T, KvEnqueue>) {
          TENURE_RETURN_IF_ERROR(CheckKeySize("key", c.key));
          return CheckValueSize(c.key, c.value);
        } else if constexpr (std::is_same_v<T, Txn>) {
          for (const TxnOp& op : c.ops) {
            TENURE_RETURN_IF_ERROR(CheckKeySize("key", op.key));
            TENURE_RETURN_IF_ERROR(CheckValueSize(op.key, op.value));
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, SessionCreate>) {
          return CheckSessionFields(c.session);
        } else if constexpr (std::is_same_v<T, RestoreChunk>) {
          return CheckRestoreChunk(c);
        } else if constexpr (std::is_same_v<T, RestoreStaged>) {
          return CheckRestoreTotal(c.restore_id, c.total);
        } else if constexpr (std::is_same_v<T, ZkWrite>) {
          if (c.ops.size() > kZkWriteOpsMax) {
            return Status::InvalidArgument("ZooKeeper multi of " + std::to_string(c.ops.size()) +
                                           " ops, more than the " + std::to_string(kZkWriteOpsMax) +
                                           " allowed");
          }
          for (const ZkOp& op : c.ops) {
            TENURE_RETURN_IF_ERROR(CheckKeySize("ZooKeeper path", op.path));
            TENURE_RETURN_IF_ERROR(CheckValueSize(op.path, op.data));
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, ZkSecret>) {
          if (c.secret.size() == kZkSecretBytes) return Status::Ok();
          return Status::InvalidArgument("ZooKeeper session secret of " +
                                         std::to_string(c.secret.size()) + " bytes, not " +
                                         std::to_string(kZkSecretBytes));
        } else if constexpr (std::is_same_v<T, EtcdTxn>) {
          // What the etcd API refuses before proposing (state/etcd_check.h).
          const etcd_texts::EtcdError refused = CheckEtcdTxn(c.txn);
          return refused.ok() ? Status::Ok() : Status::InvalidArgument(refused.message);
        } else {
          return Status::Ok();
        }
      },
      body);
}

}  // namespace tenure::state
