#include "tls/context.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

namespace tenure::tls {
namespace {

// TLS 1.2's suites: forward secrecy and AEAD only (Mozilla's "intermediate").
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// TLS 1.3's suites in the order Go's crypto/tls (Consul, etcd) prefers:
// AES-128 first, four fewer AES rounds per block than AES-256 and SHA-256 in
// the key schedule, and no weaker in practice. OpenSSL's default order puts
// AES-256 first.
constexpr char kTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

struct CtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;

// A file that cannot be opened gets the system's reason, before OpenSSL's
// less helpful "no such file" or "system lib".
Status Readable(std::string_view what, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::InvalidArgument(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
  }
  std::fclose(file);
  return Status::Ok();
}

Status Failed(std::string_view what, const std::string& path) {
  std::string why = TakeOpenSslErrors();
  return Status::InvalidArgument(
      fmt::format("{} {}: {}", what, path, why.empty() ? "not valid PEM" : why));
}

// An expired or not-yet-valid certificate is refused when it is loaded,
// rather than by every peer at its first handshake.
Status CheckValidity(SSL_CTX* ctx, const std::string& path) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (cert == nullptr) return Status::InvalidArgument("certificate " + path + ": none in file");
  auto when = [](const ASN1_TIME* time) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    ASN1_TIME_print(bio.get(), time);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
  };
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    return Status::InvalidArgument(
        fmt::format("certificate {}: expired on {}", path, when(X509_get0_notAfter(cert))));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    return Status::InvalidArgument(
        fmt::format("certificate {}: not valid before {}", path, when(X509_get0_notBefore(cert))));
  }
  return Status::Ok();
}

Result<CtxPtr> NewContext(const SSL_METHOD* method) {
  CtxPtr ctx(SSL_CTX_new(method));
  if (!ctx) return Status::Internal("TLS: cannot create a context: " + TakeOpenSslErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                     SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                  SSL_MODE_RELEASE_BUFFERS);
  // Read whole records (and what follows) per read(2), not a 5-byte header
  // and then its body: half the system calls of a TLS connection's reads.
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  if (SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1 ||
      SSL_CTX_set_ciphersuites(ctx.get(), kTls13Suites) != 1) {
    return Status::Internal("TLS: cipher list refused: " + TakeOpenSslErrors());
  }
  return ctx;
}

// An encrypted key fails to load rather than ask a terminal for its
// passphrase (OpenSSL's default).
int NoPassphrase(char*, int, int, void*) { return 0; }

Status LoadPair(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file) {
  if (Status s = Readable("certificate", cert_file); !s.ok()) return s;
  if (Status s = Readable("key", key_file); !s.ok()) return s;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Failed("certificate", cert_file);
  }
  if (Status s = CheckValidity(ctx, cert_file); !s.ok()) return s;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(key_file.c_str(), "r"), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr,
      EVP_PKEY_free);
  if (!key) return Failed("key", key_file);
  if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), key.get()) != 1) {
    TakeOpenSslErrors();
    return Status::InvalidArgument(
        fmt::format("key {} does not match certificate {}", key_file, cert_file));
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1) return Failed("key", key_file);
  return Status::Ok();
}

Status LoadCa(SSL_CTX* ctx, const std::string& ca_file) {
  if (Status s = Readable("CA file", ca_file); !s.ok()) return s;
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return Failed("CA file", ca_file);
  }
  return Status::Ok();
}

// ALPN (RFC 7301): the first of h2 (where the connection may offer it) and
// http/1.1 that the client lists; neither: no protocol, and the handshake
// goes on (the connection speaks HTTP/1.1).
int SelectAlpn(SSL* ssl, const unsigned char** out, unsigned char* out_size,
               const unsigned char* in, unsigned int in_size, void*) {
  const bool h2 = SSL_get_ex_data(ssl, AlpnOfferH2Index()) != nullptr;
  const unsigned char* http11 = nullptr;
  for (unsigned int at = 0; at < in_size;) {
    const unsigned int size = in[at];
    if (size == 0 || at + 1 + size > in_size) break;
    const std::string_view name(reinterpret_cast<const char*>(in + at + 1), size);
    if (h2 && name == "h2") {
      *out = in + at + 1;
      *out_size = static_cast<unsigned char>(size);
      return SSL_TLSEXT_ERR_OK;
    }
    if (name == "http/1.1" && http11 == nullptr) http11 = in + at + 1;
    at += 1 + size;
  }
  if (http11 == nullptr) return SSL_TLSEXT_ERR_NOACK;
  *out = http11;
  *out_size = 8;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

int AlpnOfferH2Index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

std::string TakeOpenSslErrors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!out.empty()) out += "; ";
    // "error:0A000086:SSL routines::certificate verify failed": the reason
    // after the last colon is what a reader needs.
    const char* reason = std::strrchr(buffer, ':');
    out += reason != nullptr && reason[1] != '\0' ? reason + 1 : buffer;
  }
  return out;
}

void ClearOpenSslErrors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

Context::~Context() { SSL_CTX_free(ctx_); }

Result<std::shared_ptr<const Context>> Context::ForServer(const ServerFiles& files) {
  ERR_clear_error();
  if (files.cert_file.empty() || files.key_file.empty()) {
    return Status::InvalidArgument("TLS needs both a certificate and a key file");
  }
  if (files.verify_incoming && files.ca_file.empty()) {
    return Status::InvalidArgument("verifying incoming certificates needs a CA file");
  }
  Result<CtxPtr> ctx = NewContext(TLS_server_method());
  if (!ctx.ok()) return ctx.status();
  if (Status s = LoadPair(ctx->get(), files.cert_file, files.key_file); !s.ok()) return s;
  if (!files.ca_file.empty()) {
    if (Status s = LoadCa(ctx->get(), files.ca_file); !s.ok()) return s;
    // Clients are told which CAs the server accepts.
    SSL_CTX_set_client_CA_list(ctx->get(), SSL_load_client_CA_file(files.ca_file.c_str()));
  }
  if (files.verify_incoming) {
    SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  SSL_CTX_set_alpn_select_cb(ctx->get(), &SelectAlpn, nullptr);
  std::shared_ptr<Context> context(new Context(ctx->release()));
  context->verifies_peer_ = files.verify_incoming;
  return std::shared_ptr<const Context>(std::move(context));
}

Result<std::shared_ptr<const Context>> Context::ForClient(const ClientFiles& files) {
  ERR_clear_error();
  if (files.cert_file.empty() != files.key_file.empty()) {
    return Status::InvalidArgument("a client certificate needs its key, and a key its certificate");
  }
  Result<CtxPtr> ctx = NewContext(TLS_client_method());
  if (!ctx.ok()) return ctx.status();
  if (!files.cert_file.empty()) {
    if (Status s = LoadPair(ctx->get(), files.cert_file, files.key_file); !s.ok()) return s;
  }
  if (files.verify) {
    if (!files.ca_file.empty()) {
      if (Status s = LoadCa(ctx->get(), files.ca_file); !s.ok()) return s;
    } else if (SSL_CTX_set_default_verify_paths(ctx->get()) != 1) {
      return Status::Internal("TLS: the system's CA certificates: " + TakeOpenSslErrors());
    }
    SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_NONE, nullptr);
  }
  std::shared_ptr<Context> context(new Context(ctx->release()));
  context->server_name_ = files.server_name;
  context->verifies_peer_ = files.verify;
  return std::shared_ptr<const Context>(std::move(context));
}

}  // namespace tenure::tls
