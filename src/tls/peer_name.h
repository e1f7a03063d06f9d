// What a TLS client expects of the server it dialled, set on one connection
// (an SSL) before its handshake, and why a handshake failed, in words. The
// context (tls/context.h) holds the rest: CAs, client certificate, versions.
#pragma once

#include <string>

#include "common/status.h"

struct ssl_st;  // OpenSSL's SSL

namespace tenure::tls {

// `name` is what the certificate must show: ClientFiles::server_name when
// set, else the host dialled. A DNS name is sent as SNI and checked against
// the certificate's DNS names; an IP literal ("127.0.0.1", "::1") is checked
// against its IP addresses and not sent (SNI carries host names only). With
// verify false nothing is checked, but a DNS name is still sent.
Status ExpectPeerName(ssl_st* ssl, const std::string& name, bool verify);

// OpenSSL's reason for `error` (an ERR_get_error code, as asio's ssl error
// values are), with the certificate check's own reason when that is what
// failed: "certificate verify failed (unable to get local issuer
// certificate)", "wrong version number (a plain HTTP port?)".
std::string HandshakeFailure(const ssl_st* ssl, unsigned long error);

}  // namespace tenure::tls
