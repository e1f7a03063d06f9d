// Where a client finds its agent and which token it sends, resolved the way
// Consul's tools do, so scripts written for `consul` work unchanged:
//
//   address: explicit value (-http-addr) > $TENURE_HTTP_ADDR > $CONSUL_HTTP_ADDR
//            > "127.0.0.1:8500"
//   token:   explicit value (-token) > $TENURE_HTTP_TOKEN > $CONSUL_HTTP_TOKEN > none
//
// The TENURE_ variables win over the CONSUL_ ones because they can only
// have been meant for tenure, while CONSUL_HTTP_ADDR may point at a real
// Consul in the same shell. Reads the environment; call from any thread.
#pragma once

#include <string>
#include <string_view>

namespace tenure::client {

constexpr char kDefaultHttpAddress[] = "127.0.0.1:8500";

// An empty explicit value means "not given".
std::string ResolveHttpAddress(std::string_view explicit_address);
std::string ResolveToken(std::string_view explicit_token);

}  // namespace tenure::client
