// Candidate registrations: service/<name>/candidates/<candidate>, locked by
// the candidate's session, so that a handoff (Election::ResignTo) can check
// that the named candidate is alive (docs/leadership.md, "Keys an election
// uses"). A registration lives as long as its candidate:
//
//   - a candidate that stops (tenure run exits, tenure elect stops) deletes
//     its own, DeleteOwnRegistration;
//   - one whose candidate died (kill -9, a lost machine) is unlocked when its
//     session ends and names nobody; the next candidate to register in that
//     election deletes it, SweepDeadRegistrations.
//
// The session keeps behavior "release": "delete" would delete the leader key
// too when a leader's session ends, and with it the key's fair queue
// (decision 0043).
//
// Both delete with ?cas on the ModifyIndex they read, so a registration
// taken up again in between (a candidate that re-registers with a new
// session) stays. LOOP THREAD ONLY, as net::HttpClient; `done` runs once, on
// that thread, unless the client is destroyed first.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "net/http_client.h"

namespace tenure::client {

// Deletes the registration `key` when `session` or nobody holds it. OK when
// it was deleted or there was nothing of ours to delete (absent, held by
// another session, changed meanwhile); kUnavailable with the server's answer
// when the requests failed.
void DeleteOwnRegistration(net::HttpClient& http, const std::string& key,
                           const std::string& session, std::function<void(Status)> done);

// Deletes every registration under `prefix` (".../candidates/") that no
// session holds. Best effort: `done` gets the first failure, and the caller
// may ignore it (a token that may not read the prefix, say).
void SweepDeadRegistrations(net::HttpClient& http, const std::string& prefix,
                            std::function<void(Status)> done);

}  // namespace tenure::client
