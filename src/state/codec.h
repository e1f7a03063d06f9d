// Encoders for the state's value types, shared by the command codec and the
// snapshot format (docs/formats.md). Pure.
#pragma once

#include "common/coding.h"
#include "state/txn.h"
#include "state/types.h"

namespace tenure::state {

// A session id is written as its string's bytes, as before it had a type of
// its own: the log and snapshot formats do not know the difference.
inline void EncodeSessionId(const SessionId& id, ByteWriter& w) { w.PutBytes(id.view()); }
inline SessionId DecodeSessionId(ByteReader& r) { return SessionId(r.GetString()); }

// `with_version`: the entry's version follows its fence (snapshot version
// 8); without it, an entry reads as version 1 (docs/formats.md).
void EncodeKvEntry(const KvEntry& entry, bool with_version, ByteWriter& w);
KvEntry DecodeKvEntry(ByteReader& r, bool with_version);

void EncodeSession(const Session& session, ByteWriter& w);
Session DecodeSession(ByteReader& r);

void EncodeTxnOp(const TxnOp& op, ByteWriter& w);
TxnOp DecodeTxnOp(ByteReader& r);

}  // namespace tenure::state
