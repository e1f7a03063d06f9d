// What an HttpClient callback delivered, for the client's unit tests: how
// many times it ran and its last result.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "net/http_client.h"

namespace tenure::net::testing {

struct Outcome {
  int calls = 0;
  std::optional<Result<ClientResponse>> result;
  HttpCallback Callback() {
    return [this](Result<ClientResponse> r) {
      ++calls;
      result.emplace(std::move(r));
    };
  }
  int status() const { return result && result->ok() ? (*result)->status : -1; }
  std::string body() const { return result && result->ok() ? (*result)->body : ""; }
  std::string error() const {
    return result && !result->ok() ? std::string(result->status().message()) : "";
  }
};

}  // namespace tenure::net::testing
