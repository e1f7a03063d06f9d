// Certificates for TLS tests, made with OpenSSL's API in the test process:
// a CA, leaf certificates it signs (server, client, expired, another name),
// and a second CA nobody trusts. Header-only (the unit tier globs *_test.cc).
#pragma once

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace tenure::testutil {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

struct Issued {
  KeyPtr key;
  CertPtr cert;
  std::string cert_file;
  std::string key_file;
};

struct CertOptions {
  std::string common_name = "server.dc1.tenure";
  std::vector<std::string> dns = {"localhost", "server.dc1.tenure"};
  std::vector<std::string> ips = {"127.0.0.1"};
  long not_before_s = -3600;  // from now
  long not_after_s = 86400;
  bool ca = false;
};

inline KeyPtr NewKey() { return KeyPtr(EVP_EC_gen("P-256")); }

inline void WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) std::abort();
  if (cert != nullptr) PEM_write_X509(file, cert);
  if (key != nullptr) PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(file);
}

// Signs a certificate for `options` with `issuer` (self-signed when null).
inline Issued Issue(const std::string& dir, const std::string& name, const CertOptions& options,
                    const Issued* issuer) {
  static long serial = 1;
  Issued out;
  out.key = NewKey();
  out.cert.reset(X509_new());
  X509* cert = out.cert.get();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), options.not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert), options.not_after_s);
  X509_set_pubkey(cert, out.key.get());
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(options.common_name.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer->cert.get()) : subject);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer ? issuer->cert.get() : cert, cert, nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) std::abort();
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  };
  if (options.ca) {
    add(NID_basic_constraints, "critical,CA:TRUE");
    add(NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add(NID_basic_constraints, "CA:FALSE");
    add(NID_ext_key_usage, "serverAuth,clientAuth");
    std::string san;
    for (const std::string& dns : options.dns) san += (san.empty() ? "" : ",") + ("DNS:" + dns);
    for (const std::string& ip : options.ips) san += (san.empty() ? "" : ",") + ("IP:" + ip);
    if (!san.empty()) add(NID_subject_alt_name, san);
  }
  X509_sign(cert, issuer ? issuer->key.get() : out.key.get(), EVP_sha256());
  out.cert_file = dir + "/" + name + ".pem";
  out.key_file = dir + "/" + name + "-key.pem";
  WritePem(out.cert_file, cert, nullptr);
  WritePem(out.key_file, nullptr, out.key.get());
  return out;
}

// A CA and what tests need from it, in a fresh directory.
struct TestPki {
  std::string dir;
  Issued ca;
  Issued other_ca;  // trusted by nobody
  Issued server;
  Issued client;
  Issued expired;
  Issued future;
  Issued wrong_name;
  Issued stranger;  // a client certificate from other_ca

  TestPki() {
    char pattern[] = "/tmp/tenure-pki-XXXXXX";
    dir = ::mkdtemp(pattern);
    CertOptions ca_options;
    ca_options.common_name = "tenure test CA";
    ca_options.ca = true;
    ca = Issue(dir, "ca", ca_options, nullptr);
    ca_options.common_name = "another CA";
    other_ca = Issue(dir, "other-ca", ca_options, nullptr);
    server = Issue(dir, "server", CertOptions{}, &ca);
    CertOptions client_options;
    client_options.common_name = "client.dc1.tenure";
    client_options.dns = {};
    client_options.ips = {};
    client = Issue(dir, "client", client_options, &ca);
    CertOptions old;
    old.not_before_s = -7200;
    old.not_after_s = -3600;
    expired = Issue(dir, "expired", old, &ca);
    CertOptions later;
    later.not_before_s = 3600;
    later.not_after_s = 7200;
    future = Issue(dir, "future", later, &ca);
    CertOptions elsewhere;
    elsewhere.common_name = "elsewhere";
    elsewhere.dns = {"elsewhere.example"};
    elsewhere.ips = {"10.9.9.9"};
    wrong_name = Issue(dir, "wrong-name", elsewhere, &ca);
    stranger = Issue(dir, "stranger", client_options, &other_ca);
  }
  ~TestPki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

// A new TestPki that lasts as long as the test process. The object is
// never destroyed (its keys would be freed after OpenSSL's own cleanup at
// exit), but its directory is removed at exit, so no run leaves one behind.
inline TestPki* NewProcessPki() {
  static auto* dirs = new std::vector<std::string>();
  static const struct RemoveAtExit {
    ~RemoveAtExit() {
      for (const std::string& dir : *dirs) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
      }
    }
  } remove_at_exit;
  auto* pki = new TestPki();
  dirs->push_back(pki->dir);
  return pki;
}

}  // namespace tenure::testutil
