#include "tls/context.h"

#include <gtest/gtest.h>

#include <fstream>

#include "unit/tls/test_certs.h"

namespace tenure::tls {
namespace {

class TlsContextTest : public ::testing::Test {
 protected:
  static testutil::TestPki& pki() {
    static testutil::TestPki* made = testutil::NewProcessPki();
    return *made;
  }
  ServerFiles ServerWith(const testutil::Issued& leaf) {
    return {leaf.cert_file, leaf.key_file, pki().ca.cert_file, false};
  }
};

TEST_F(TlsContextTest, AServerContextLoadsAMatchingPair) {
  auto context = Context::ForServer(ServerWith(pki().server));
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  EXPECT_NE((*context)->raw(), nullptr);
  EXPECT_FALSE((*context)->verifies_peer());
}

TEST_F(TlsContextTest, EveryBadFileIsNamedWithItsReason) {
  ServerFiles files = ServerWith(pki().server);
  files.cert_file = pki().dir + "/missing.pem";
  auto missing = Context::ForServer(files);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "certificate " + files.cert_file + ": No such file or directory");

  files = ServerWith(pki().server);
  files.key_file = pki().client.key_file;  // another certificate's key
  auto mismatched = Context::ForServer(files);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.status().message(),
            "key " + files.key_file + " does not match certificate " + files.cert_file);

  const std::string garbage = pki().dir + "/garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  files = ServerWith(pki().server);
  files.cert_file = garbage;
  auto bad_pem = Context::ForServer(files);
  ASSERT_FALSE(bad_pem.ok());
  EXPECT_EQ(bad_pem.status().message().rfind("certificate " + garbage + ": ", 0), 0u)
      << bad_pem.status().message();

  files = ServerWith(pki().server);
  files.ca_file = garbage;
  auto bad_ca = Context::ForServer(files);
  ASSERT_FALSE(bad_ca.ok());
  EXPECT_EQ(bad_ca.status().message().rfind("CA file " + garbage + ": ", 0), 0u)
      << bad_ca.status().message();
}

TEST_F(TlsContextTest, ExpiredAndNotYetValidCertificatesAreRefusedAtLoad) {
  auto expired = Context::ForServer(ServerWith(pki().expired));
  ASSERT_FALSE(expired.ok());
  EXPECT_NE(expired.status().message().find(": expired on "), std::string::npos)
      << expired.status().message();
  auto future = Context::ForServer(ServerWith(pki().future));
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.status().message().find(": not valid before "), std::string::npos)
      << future.status().message();
}

TEST_F(TlsContextTest, VerifyingIncomingNeedsACa) {
  ServerFiles files = ServerWith(pki().server);
  files.ca_file.clear();
  files.verify_incoming = true;
  auto context = Context::ForServer(files);
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().message(), "verifying incoming certificates needs a CA file");
  files.cert_file.clear();
  EXPECT_EQ(Context::ForServer(files).status().message(),
            "TLS needs both a certificate and a key file");
}

TEST_F(TlsContextTest, AClientCertificateNeedsItsKey) {
  ClientFiles files;
  files.ca_file = pki().ca.cert_file;
  files.cert_file = pki().client.cert_file;
  auto context = Context::ForClient(files);
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().message(),
            "a client certificate needs its key, and a key its certificate");
  files.key_file = pki().client.key_file;
  files.server_name = "server.dc1.tenure";
  auto good = Context::ForClient(files);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)->server_name(), "server.dc1.tenure");
  EXPECT_TRUE((*good)->verifies_peer());
}

}  // namespace
}  // namespace tenure::tls
