// TLS contexts built from PEM files: the server's (HTTPS listener, raft
// links) and the client's (the HTTP client, outbound raft links). OpenSSL
// stays behind this header: users see an opaque SSL_CTX and Statuses that
// name the file and OpenSSL's reason.
//
// What every context enforces: TLS 1.2 or newer; for TLS 1.2 only ECDHE key
// exchange with AES-GCM or ChaCha20-Poly1305 (TLS 1.3's suites are all
// AEAD); no renegotiation, no compression, no session tickets that outlive
// a key reload. A certificate and its key must match, or building fails.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace tenure::tls {

struct ServerFiles {
  std::string cert_file;  // PEM: the certificate, then any intermediates
  std::string key_file;   // PEM private key (unencrypted)
  std::string ca_file;    // PEM CAs that sign client (and peer) certificates
  // Require a client certificate signed by ca_file (Consul's
  // verify_incoming, etcd's --client-cert-auth).
  bool verify_incoming = false;
};

struct ClientFiles {
  std::string ca_file;    // PEM CAs for the server's certificate; "" = the system's
  std::string cert_file;  // client certificate, for servers that verify incoming
  std::string key_file;
  std::string server_name;  // SNI and the name checked; "" = the host dialled
  bool verify = true;       // false: no check of the server (CONSUL_HTTP_SSL_VERIFY=false)
};

class Context {
 public:
  static Result<std::shared_ptr<const Context>> ForServer(const ServerFiles& files);
  static Result<std::shared_ptr<const Context>> ForClient(const ClientFiles& files);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // The SSL_CTX, for SSL_new or asio::ssl::context (take a reference with
  // SSL_CTX_up_ref first: both free it).
  ssl_ctx_st* raw() const { return ctx_; }
  // Client contexts: the name to send and check, "" = the host dialled.
  const std::string& server_name() const { return server_name_; }
  bool verifies_peer() const { return verifies_peer_; }

 private:
  explicit Context(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
  std::string server_name_;
  bool verifies_peer_ = false;
};

// Server contexts answer ALPN: "h2" when the client offers it and the
// connection's Session may offer it (set on the SSL under this ex_data
// index), else "http/1.1" when offered, else no protocol (the connection
// then speaks HTTP/1.1, as it did before ALPN; raft links offer none).
int AlpnOfferH2Index();

// OpenSSL's error queue as one line ("" if empty), and the queue cleared.
std::string TakeOpenSslErrors();
// Empties the queue, as SSL_get_error needs before each SSL_read or
// SSL_write: cheaply when it is empty already, the usual case
// (ERR_clear_error resets all 16 slots, ~800 instructions).
void ClearOpenSslErrors();

}  // namespace tenure::tls
