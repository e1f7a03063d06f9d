// Where a client finds its agent and which token it sends, resolved the way
// Consul's tools do, so scripts written for `consul` work unchanged:
//
//   address: explicit value (-http-addr) > $TENURE_HTTP_ADDR > $CONSUL_HTTP_ADDR
//            > "127.0.0.1:8500"
//   token:   explicit value (-token) > explicit file (-token-file)
//            > $TENURE_HTTP_TOKEN > $TENURE_HTTP_TOKEN_FILE
//            > $CONSUL_HTTP_TOKEN > $CONSUL_HTTP_TOKEN_FILE > none
//
// The TENURE_ variables win over the CONSUL_ ones because they can only
// have been meant for tenure, while CONSUL_HTTP_ADDR may point at a real
// Consul in the same shell. Within each origin a value wins over a file, as
// in Consul. A token file is read whole and trimmed of surrounding
// whitespace. Reads the environment and the file; call from any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure::client {

constexpr char kDefaultHttpAddress[] = "127.0.0.1:8500";

// An empty explicit value means "not given".
std::string ResolveHttpAddress(std::string_view explicit_address);

// The token to send ("" for none). The first source given decides: a token
// file that cannot be read, or is empty once trimmed, or a token with a
// control character inside (it could not be a header's value) is an
// kInvalidArgument error naming the file and where it came from, e.g.
// "cannot read the token file /run/t (from $CONSUL_HTTP_TOKEN_FILE): No such
// file or directory"; later sources are not consulted then.
Result<std::string> ResolveToken(std::string_view explicit_token,
                                 std::string_view explicit_token_file = "");

// The trimmed contents of a token file; `origin` names where the path came
// from for the error texts ("-token-file", "$CONSUL_HTTP_TOKEN_FILE").
Result<std::string> ReadTokenFile(std::string_view path, std::string_view origin);

}  // namespace tenure::client
