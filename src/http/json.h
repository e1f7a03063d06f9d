// Consul's JSON shapes, written by hand for speed on hot paths (KV reads,
// renewals). The only place that knows Consul's wire field names.
// Strings are escaped as Go's encoding/json does (HTML-safe: < > & as \u003c
// \u003e \u0026; invalid UTF-8 as \ufffd). Pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_string.h"
#include "state/acl_table.h"
#include "state/txn.h"
#include "state/types.h"

namespace tenure::http::json {

// Go's string encoding (common/json_string.h).
using ::tenure::json::AppendString;
using ::tenure::json::StringSize;
// A DirEntry: {"LockIndex","Key","Flags","Value","Session"(omitted when
// unlocked),"Fence"(tenure; omitted when unlocked),"CreateIndex","ModifyIndex"}.
void AppendKvEntry(std::string* out, const state::KvEntry& entry, bool with_value = true);
// A session; "TTLRemaining" (tenure; nanoseconds, like LockDelay) when
// ttl_remaining_ns is given.
void AppendSession(std::string* out, const state::Session& session,
                   std::optional<std::int64_t> ttl_remaining_ns = std::nullopt);
// What a session read adds per session: its TTLRemaining, or nullopt.
using TtlRemaining = std::function<std::optional<std::int64_t>(const state::Session&)>;

// The exact size of what AppendKvEntry writes, computed without
// writing: the answer-size limit (docs/limits.md) counts an answer from the
// Store before building it.
std::size_t KvEntrySize(const state::KvEntry& entry, bool with_value = true);

std::string KvEntries(const std::vector<const state::KvEntry*>& entries);
// The same from copies (a large answer built off the loop thread).
std::string KvEntries(const std::vector<state::KvEntry>& entries);
std::string Sessions(const std::vector<const state::Session*>& sessions);
// The same, or nullopt once the text passes max_bytes (the answer-size
// limit; building stops there, so a refusal costs at most max_bytes).
std::optional<std::string> Sessions(const std::vector<const state::Session*>& sessions,
                                    std::size_t max_bytes,
                                    const TtlRemaining& ttl_remaining = nullptr);
std::string Strings(const std::vector<std::string>& strings);
std::string TxnOutcome(const state::TxnOutcome& outcome);

// ACL tokens and policies as Consul's API writes them. A token's Policies
// are {"ID","Name"} links to the policies that still exist; its SecretID is
// "<hidden>" unless show_secret (acl:write, or the token's own holder).
// ExpirationTime is omitted when the token has none. Consul's Hash is not
// written (docs/consul-compat.md).
void AppendAclToken(std::string* out, const state::AclToken& token, const state::AclTable& table,
                    bool show_secret);
// Lists (/v1/acl/policies) leave the Rules out, as Consul does.
void AppendAclPolicy(std::string* out, const state::AclPolicy& policy, bool with_rules);

// Re-indents compact JSON with 4 spaces and a trailing newline (?pretty),
// as Go's json.MarshalIndent does: strings are copied as they are, escapes
// included. Works on the text without parsing it (a parsed 64 MiB answer
// would take ten times that); nullopt once the output passes max_bytes.
std::optional<std::string> Pretty(std::string_view compact, std::size_t max_bytes);

}  // namespace tenure::http::json
