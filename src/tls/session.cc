#include "tls/session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <climits>

#include "common/assert.h"
#include "tls/peer_name.h"

namespace tenure::tls {

Session::Session(const Context& context, int fd, bool offer_h2) : ssl_(SSL_new(context.raw())) {
  TENURE_ASSERT(ssl_ != nullptr);  // only fails out of memory
  SSL_set_fd(ssl_, fd);
  if (offer_h2) SSL_set_ex_data(ssl_, AlpnOfferH2Index(), ssl_);  // any non-null pointer
  SSL_set_accept_state(ssl_);
}

Result<std::unique_ptr<Session>> Session::Dial(const Context& context, int fd,
                                               const std::string& host) {
  ssl_st* ssl = SSL_new(context.raw());
  TENURE_ASSERT(ssl != nullptr);  // only fails out of memory
  std::unique_ptr<Session> session(new Session(ssl));
  SSL_set_fd(ssl, fd);
  SSL_set_connect_state(ssl);
  const std::string& name = context.server_name().empty() ? host : context.server_name();
  TENURE_RETURN_IF_ERROR(ExpectPeerName(ssl, name, context.verifies_peer()));
  return session;
}

Session::~Session() { SSL_free(ssl_); }

bool Session::handshake_done() const { return SSL_is_init_finished(ssl_) == 1; }

bool Session::has_pending() const { return SSL_has_pending(ssl_) == 1; }

bool Session::alpn_h2() const {
  const unsigned char* protocol = nullptr;
  unsigned int size = 0;
  SSL_get0_alpn_selected(ssl_, &protocol, &size);
  return size == 2 && protocol[0] == 'h' && protocol[1] == '2';
}

ssize_t Session::Receive(char* buffer, std::size_t size) {
  ClearOpenSslErrors();
  const int n = SSL_read(ssl_, buffer, static_cast<int>(size > INT_MAX ? INT_MAX : size));
  return Finish(n);
}

ssize_t Session::Send(const char* data, std::size_t size) {
  ClearOpenSslErrors();
  const int n = SSL_write(ssl_, data, static_cast<int>(size > INT_MAX ? INT_MAX : size));
  return Finish(n);
}

ssize_t Session::Finish(int result) {
  wants_write_ = false;
  if (result > 0) return result;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wants_write_ = true;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      return 0;
    case SSL_ERROR_SYSCALL: {
      const unsigned long queued = ERR_peek_error();
      if (queued == 0 && errno == 0) return 0;  // EOF without close_notify: a plain close
      if (queued == 0) return -1;               // errno from the socket (ECONNRESET...)
      break;
    }
    default:
      break;
  }
  const unsigned long code = ERR_peek_error();
  if (ERR_GET_LIB(code) == ERR_LIB_SSL &&
      ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    // Most HTTP clients close without close_notify; HTTP's own framing
    // tells a cut-off request from a finished one.
    ERR_clear_error();
    return 0;
  }
  plain_http_ = ERR_GET_LIB(code) == ERR_LIB_SSL && ERR_GET_REASON(code) == SSL_R_HTTP_REQUEST;
  error_ = TakeOpenSslErrors();
  if (error_.empty()) error_ = "TLS protocol error";
  if (SSL_get_verify_result(ssl_) != X509_V_OK) {
    error_ += std::string(" (") + X509_verify_cert_error_string(SSL_get_verify_result(ssl_)) + ")";
  }
  errno = EPROTO;
  return -1;
}

// The context's SSL_MODE_RELEASE_BUFFERS frees both ~17 KiB record buffers
// whenever they drain: right for handshakes and rare requests (1,000
// watchers connecting at once stay small), but on a busy connection it is
// about 1,400 instructions of malloc and free per request.
void Session::KeepBuffers() { SSL_clear_mode(ssl_, SSL_MODE_RELEASE_BUFFERS); }

void Session::ReleaseBuffers() {
  SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  // Refused (harmlessly) while a buffer holds data; the mode frees it later.
  SSL_free_buffers(ssl_);
}

void Session::Shutdown() {
  if (!handshake_done()) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // one attempt: the socket is shut next either way
  ERR_clear_error();
}

}  // namespace tenure::tls
