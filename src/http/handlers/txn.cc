// PUT /v1/txn: KV operations applied atomically (docs/consul-api.md section 4).
// Read-only transactions are answered from the Store without a raft write.
#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/consul_texts.h"
#include "common/limits.h"
#include "common/strings.h"
#include "http/answer_size.h"
#include "http/api.h"
#include "http/json.h"
#include "http/json_input.h"

namespace tenure::http {
namespace {

using Json = nlohmann::json;

Status ParseFailed(const std::string& why) { return consul::FailedToParseBody(why); }

struct ParsedTxn {
  std::vector<state::TxnOp> ops;
  std::vector<state::TxnError> errors;  // unknown verbs: reported like Consul, as a rollback
  bool writes = false;
};

Result<std::uint64_t> Uint(const Json& value, std::string_view field) {
  if (value.is_null()) return std::uint64_t{0};
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return ParseFailed(std::string(field) + " must be an unsigned integer");
}

Result<ParsedTxn> ParseTxn(const std::string& body) {
  Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ParseFailed("invalid JSON");
  if (!doc.is_array()) return ParseFailed("the body must be a JSON array of operations");
  if (doc.size() > limits::kTxnOpsMax) {
    return consul::TxnTooManyOps(doc.size(), limits::kTxnOpsMax);
  }
  ParsedTxn txn;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const Json& item = doc[i];
    if (!item.is_object())
      return ParseFailed("operation " + std::to_string(i) + " is not an object");
    const Json* kv = Field(item, "KV");
    if (kv == nullptr || kv->is_null()) {
      std::string kind = item.empty() ? "empty" : item.begin().key();
      return ParseFailed("operation " + std::to_string(i) +
                         ": only KV operations are supported (got " + kind + ")");
    }
    if (!kv->is_object())
      return ParseFailed("operation " + std::to_string(i) + ": KV must be an object");
    state::TxnOp op;
    std::string verb_name;
    if (const Json* verb = Field(*kv, "Verb"); verb && verb->is_string()) {
      verb_name = verb->get<std::string>();
    }
    if (const Json* key = Field(*kv, "Key"); key && !key->is_null()) {
      if (!key->is_string()) return ParseFailed("Key must be a string");
      op.key = key->get<std::string>();
    }
    if (op.key.size() > limits::kKvKeyBytesMax) {
      return consul::KeyTooLong(op.key.size(), limits::kKvKeyBytesMax);
    }
    if (const Json* value = Field(*kv, "Value"); value && !value->is_null()) {
      if (!value->is_string()) return ParseFailed("Value must be a base64 string");
      auto decoded = Base64Decode(value->get<std::string>());
      if (!decoded)
        return ParseFailed("illegal base64 data in Value of operation " + std::to_string(i));
      if (decoded->size() > limits::kKvValueBytesMax) {
        return consul::ValueTooLarge(op.key, decoded->size(), limits::kKvValueBytesMax);
      }
      op.value = std::move(*decoded);
    }
    if (const Json* flags = Field(*kv, "Flags")) {
      TENURE_ASSIGN_OR_RETURN(op.flags, Uint(*flags, "Flags"));
    }
    if (const Json* index = Field(*kv, "Index")) {
      TENURE_ASSIGN_OR_RETURN(op.index, Uint(*index, "Index"));
    }
    if (const Json* session = Field(*kv, "Session"); session && !session->is_null()) {
      if (!session->is_string()) return ParseFailed("Session must be a string");
      op.session = session->get<std::string>();
    }
    auto verb = state::ParseTxnVerb(verb_name);
    if (!verb) {
      txn.errors.push_back({i, "unknown KV verb " + GoQuote(verb_name)});
      continue;
    }
    op.verb = *verb;
    txn.writes = txn.writes || state::IsWriteVerb(op.verb);
    txn.ops.push_back(std::move(op));
  }
  return txn;
}

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
