// Store: the lock history's side of an apply (docs/history.md). PutEntry and
// DeleteEntry note every holder change as it happens; RecordHistory turns
// the changes of an apply into grants and ends once the apply is final (a
// txn that rolls back drops its notes), with the cause its command gives:
//   - the holder's session destroyed (either behavior): destroy or ttl-expiry;
//   - the key deleted while held: delete;
//   - released: release, or handoff when the same apply (a txn) grants the
//     key to another session.
#include "state/store.h"

namespace tenure::state {

void Store::NoteHolderChange(const std::string& key, const KvEntry* before, const KvEntry* after) {
  HolderChange change;
  change.key = key;
  if (before != nullptr) {
    change.old_session = before->session;
    change.old_fence = before->fence;
  }
  if (after != nullptr) {
    change.new_session = after->session;
    change.new_fence = after->fence;
  } else {
    change.deleted = true;
  }
  if (change.old_session == change.new_session && change.old_fence == change.new_fence) return;
  holder_changes_.push_back(std::move(change));
}

void Store::RecordHistory(LogIndex index, ApplyResult* result) {
  std::vector<HolderChange> changes = std::move(holder_changes_);
  holder_changes_.clear();
  const EndCause session_cause = session_end_cause_;
  session_end_cause_ = EndCause::kNone;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const HolderChange& c = changes[i];
    if (!c.old_session.empty()) {
      EndCause cause = session_cause;
      if (cause == EndCause::kNone) cause = c.deleted ? EndCause::kDelete : EndCause::kRelease;
      if (cause == EndCause::kRelease) {
        for (std::size_t j = i + 1; j < changes.size(); ++j) {
          if (changes[j].key == c.key && !changes[j].new_session.empty() &&
              changes[j].new_session != c.old_session) {
            cause = EndCause::kHandoff;
            break;
          }
        }
      }
      if (const LockGrant* ended = history_.End(c.key, c.old_fence, cause, wall_ms_, index)) {
        result->lock_events.push_back({c.key, *ended, true});
      }
    }
    if (!c.new_session.empty()) {
      LockGrant grant;
      grant.fence = c.new_fence;
      grant.session = c.new_session;
      if (const Session* s = FindSession(c.new_session)) {
        grant.session_name = s->name;
        grant.node = s->node;
      }
      grant.granted_at = wall_ms_;
      grant.grant_index = c.new_fence;
      // The event carries the grant as recorded (names cut, CutName).
      result->lock_events.push_back({c.key, history_.Grant(c.key, std::move(grant)), false});
    }
  }
}

}  // namespace tenure::state
