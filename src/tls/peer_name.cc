#include "tls/peer_name.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "tls/context.h"

namespace tenure::tls {
namespace {

bool IsIpLiteral(const std::string& name) {
  unsigned char bytes[16];
  return ::inet_pton(AF_INET, name.c_str(), bytes) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), bytes) == 1;
}

}  // namespace

Status ExpectPeerName(ssl_st* ssl, const std::string& name, bool verify) {
  ERR_clear_error();
  if (name.empty()) return Status::InvalidArgument("TLS: no server name to check");
  const bool ip = IsIpLiteral(name);
  if (!ip && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    return Status::InvalidArgument("TLS: server name " + name + ": " + TakeOpenSslErrors());
  }
  if (!verify) return Status::Ok();
  const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str())
                     : SSL_set1_host(ssl, name.c_str());
  if (set != 1) {
    return Status::InvalidArgument("TLS: server name " + name + ": " + TakeOpenSslErrors());
  }
  return Status::Ok();
}

std::string HandshakeFailure(const ssl_st* ssl, unsigned long error) {
  const char* reason = ERR_reason_error_string(error);
  std::string out = reason != nullptr ? reason : "error " + std::to_string(error);
  const long verified = SSL_get_verify_result(ssl);
  if (ERR_GET_REASON(error) == SSL_R_CERTIFICATE_VERIFY_FAILED && verified != X509_V_OK) {
    out += std::string(" (") + X509_verify_cert_error_string(verified) + ")";
  }
  // What a plain HTTP answer to the client's hello looks like.
  if (ERR_GET_REASON(error) == SSL_R_WRONG_VERSION_NUMBER) out += " (a plain HTTP port?)";
  return out;
}

}  // namespace tenure::tls
