// Where a client finds its agent and which token it sends, resolved the way
// Consul's tools do, so scripts written for `consul` work unchanged:
//
//   address: explicit value (-http-addr) > $TENURE_HTTP_ADDR > $CONSUL_HTTP_ADDR
//            > "127.0.0.1:8500"
//   token:   explicit value (-token) > explicit file (-token-file)
//            > $TENURE_HTTP_TOKEN > $TENURE_HTTP_TOKEN_FILE
//            > $CONSUL_HTTP_TOKEN > $CONSUL_HTTP_TOKEN_FILE > none
//
//   TLS, each setting on its own: explicit value (-ca-file, -client-cert,
//            -client-key, -tls-server-name) > $TENURE_X > $CONSUL_X, where X
//            is CACERT, CLIENT_CERT, CLIENT_KEY, TLS_SERVER_NAME, HTTP_SSL
//            (https for addresses without a scheme) and HTTP_SSL_VERIFY
//            (false: the server's certificate is not checked)
//
// The TENURE_ variables win over the CONSUL_ ones because they can only
// have been meant for tenure, while CONSUL_HTTP_ADDR may point at a real
// Consul in the same shell. Within each origin a value wins over a file, as
// in Consul. A token file is read whole and trimmed of surrounding
// whitespace. Reads the environment and the file; call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/http_client.h"

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

// TLS settings given explicitly (flags, libtenure's options): "" and
// nullopt mean "not given", and the environment is asked.
struct TlsChoices {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string server_name;
  std::optional<bool> verify;
  std::optional<bool> https;  // for addresses without a scheme
};

// The TLS options of the client. A boolean variable takes what Go's
// strconv.ParseBool takes (1, t, true, TRUE, 0, f, false...); anything else
// is a kInvalidArgument error naming the variable (Consul only warns, but a
// misspelt "flase" must not quietly keep, or drop, the certificate check).
// The files are not read here: the client reads them when it first needs
// TLS, and names the one that fails.
Result<net::TlsOptions> ResolveTls(const TlsChoices& given);

// The trimmed contents of a token file; `origin` names where the path came
// from for the error texts ("-token-file", "$CONSUL_HTTP_TOKEN_FILE").
Result<std::string> ReadTokenFile(std::string_view path, std::string_view origin);

}  // namespace tenure::client
