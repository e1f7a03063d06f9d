// PUT /v1/txn: KV operations applied atomically (docs/consul-api.md section 4).
// Read-only transactions are answered from the Store without a raft write.

#include "common/base64.h"
#include "common/consul_texts.h"
#include "common/limits.h"
#include "common/strings.h"
#include "http/answer_size.h"
#include "http/api.h"
#include "http/json.h"
#include "http/request_bodies.h"

namespace tenure::http {
namespace {

// The answer-size limit (docs/limits.md), counted over every operation
// before the Store copies a value.
Status CheckAnswerSize(const state::Store& store, const std::vector<state::TxnOp>& ops) {
  if (TxnAnswerSize(store, ops, limits::kHttpResponseBytesMax) <= limits::kHttpResponseBytesMax) {
    return Status::Ok();
  }
  return Status::TooLarge("Transaction results too large (more than " +
                          std::to_string(limits::kHttpResponseBytesMax) +
                          " bytes); use fewer or narrower get-tree operations");
}

HttpResponse TxnResponse(const state::TxnOutcome& outcome) {
  return HttpResponse::Json(json::TxnOutcome(outcome), outcome.ok() ? 200 : 409);
}

// Consul's pre-check: every op's permission before any is applied. Reads
// that only return entries (get, get-or-empty, get-tree) are filtered on the
// way out instead; checks that reveal a key's state need key:read; deleting
// a tree needs write on all of it; the rest (check-not-exists included, as
// in Consul) need key:write.
std::vector<state::TxnError> DeniedOps(const Call& call, const std::vector<state::TxnOp>& ops) {
  std::vector<state::TxnError> errors;
  const acl::Authorizer& can = call.caller.can();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const state::TxnOp& op = ops[i];
    std::optional<acl::Decision> decision;
    switch (op.verb) {
      case state::TxnVerb::kGet:
      case state::TxnVerb::kGetOrEmpty:
      case state::TxnVerb::kGetTree:
        break;
      case state::TxnVerb::kCheckIndex:
      case state::TxnVerb::kCheckSession:
      case state::TxnVerb::kCheckFence:
        decision = can.KeyRead(op.key);
        break;
      case state::TxnVerb::kDeleteTree:
        decision = can.KeyWritePrefix(op.key);
        break;
      default:
        decision = can.KeyWrite(op.key);
        break;
    }
    if (decision && !decision->allowed()) {
      errors.push_back({i, std::string(call.caller.Denied(*decision, op.key).message())});
    }
  }
  return errors;
}

// Results the caller may not read are left out, as Consul's FilterTxnResults.
// Only a read-only transaction says so (Consul's write answers carry no
// query meta).
HttpResponse FilteredTxnResponse(const Call& call, state::TxnOutcome outcome, bool read_only) {
  std::size_t removed = 0;
  if (!call.caller.unrestricted) {
    removed = acl::EraseUnreadableKeys(call.caller.can(), outcome.results,
                                       [](const state::TxnResultEntry& r) { return r.entry.key; });
  }
  HttpResponse response = TxnResponse(outcome);
  if (read_only) MarkFiltered(call, removed, &response);
  return response;
}

}  // namespace

void Api::Txn(const CallPtr& call) {
  if (call->request->body.size() > limits::kTxnBodyBytesMax) {
    call->ReplyError(consul::RequestBodyTooLarge(limits::kTxnBodyBytesMax));
    return;
  }
  auto parsed = ParseTxn(call->request->body);
  if (call->Failed(parsed)) return;
  if (!parsed->errors.empty()) {
    state::TxnOutcome outcome;
    outcome.errors = std::move(parsed->errors);
    call->Reply(TxnResponse(outcome));
    return;
  }
  if (std::vector<state::TxnError> denied = DeniedOps(*call, parsed->ops); !denied.empty()) {
    state::TxnOutcome outcome;
    outcome.errors = std::move(denied);
    call->Reply(TxnResponse(outcome));
    return;
  }
  if (!parsed->writes) {
    auto read = [this, call, ops = std::move(parsed->ops)] {
      if (Status size = CheckAnswerSize(server_.store(), ops); !size.ok()) {
        call->ReplyError(size);
        return;
      }
      HttpResponse response = FilteredTxnResponse(*call, server_.store().ReadTxn(ops), true);
      response.headers.emplace_back("X-Consul-KnownLeader",
                                    server_.KnownLeader() ? "true" : "false");
      response.headers.emplace_back("X-Consul-LastContact",
                                    std::to_string(server_.LastContactMs()));
      call->Reply(std::move(response));
    };
    if (!call->options.consistent) {
      read();
      return;
    }
    server_.Barrier([call, read = std::move(read)](Status status) {
      if (!status.ok()) {
        call->ReplyError(status);
        return;
      }
      read();
    });
    return;
  }
  // Counted against the state now; the apply builds the same results on
  // every replica, so a refused transaction is never proposed.
  if (Status size = CheckAnswerSize(server_.store(), parsed->ops); !size.ok()) {
    call->ReplyError(size);
    return;
  }
  ProposeThen(call, state::Txn{std::move(parsed->ops)}, [call](const state::ApplyResult& result) {
    if (!result.status.ok()) {
      call->ReplyError(result.status);
      return;
    }
    call->Reply(FilteredTxnResponse(*call, result.txn, false));
  });
}

}  // namespace tenure::http
