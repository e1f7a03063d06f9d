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

}  // namespace

void Api::Txn(const CallPtr& call) {
  if (call->request.body.size() > limits::kTxnBodyBytesMax) {
    call->ReplyError(consul::RequestBodyTooLarge(limits::kTxnBodyBytesMax));
    return;
  }
  auto parsed = ParseTxn(call->request.body);
  if (!parsed.ok()) {
    call->ReplyError(parsed.status());
    return;
  }
  if (!parsed->errors.empty()) {
    state::TxnOutcome outcome;
    outcome.errors = std::move(parsed->errors);
    call->Reply(TxnResponse(outcome));
    return;
  }
  if (!parsed->writes) {
    auto read = [this, call, ops = std::move(parsed->ops)] {
      if (Status size = CheckAnswerSize(server_.store(), ops); !size.ok()) {
        call->ReplyError(size);
        return;
      }
      HttpResponse response = TxnResponse(server_.store().ReadTxn(ops));
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
    call->Reply(TxnResponse(result.txn));
  });
}

}  // namespace tenure::http
