// Which token a client sends (client/settings.h): -token, -token-file, then
// the TENURE_ and CONSUL_ variables, each value before its file. Every test
// runs in a process of its own (gtest_discover_tests), so the environment
// it sets stays its own; each clears the four variables first.
#include "client/settings.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace tenure::client {
namespace {

class TokenSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) ::unsetenv(name);
    char pattern[] = "/tmp/tenure-settings-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
    for (const std::string& path : files_) std::remove(path.c_str());
    ::rmdir(dir_.c_str());
  }

  std::string File(const std::string& name, const std::string& contents) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << contents;
    files_.push_back(path);
    return path;
  }

  static std::string Resolved(std::string_view token, std::string_view file = "") {
    Result<std::string> got = ResolveToken(token, file);
    return got.ok() ? *got : "error: " + std::string(got.status().message());
  }

  static constexpr const char* kVariables[] = {"TENURE_HTTP_TOKEN", "TENURE_HTTP_TOKEN_FILE",
                                               "CONSUL_HTTP_TOKEN", "CONSUL_HTTP_TOKEN_FILE"};
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(TokenSettingsTest, NoneGivenMeansNoToken) { EXPECT_EQ(Resolved(""), ""); }

TEST_F(TokenSettingsTest, EachSourceWinsOverTheOnesAfterIt) {
  ::setenv("CONSUL_HTTP_TOKEN_FILE", File("consul-file", "consul-file-token\n").c_str(), 1);
  EXPECT_EQ(Resolved(""), "consul-file-token");
  ::setenv("CONSUL_HTTP_TOKEN", "consul-token", 1);
  EXPECT_EQ(Resolved(""), "consul-token");
  ::setenv("TENURE_HTTP_TOKEN_FILE", File("tenure-file", "  tenure-file-token \n").c_str(), 1);
  EXPECT_EQ(Resolved(""), "tenure-file-token");
  ::setenv("TENURE_HTTP_TOKEN", "tenure-token", 1);
  EXPECT_EQ(Resolved(""), "tenure-token");
  EXPECT_EQ(Resolved("", File("flag-file", "flag-file-token")), "flag-file-token");
  EXPECT_EQ(Resolved("flag-token", File("flag-file2", "flag-file-token")), "flag-token");
}

TEST_F(TokenSettingsTest, AnEmptyVariableIsNotGiven) {
  ::setenv("TENURE_HTTP_TOKEN", "", 1);
  ::setenv("TENURE_HTTP_TOKEN_FILE", "", 1);
  ::setenv("CONSUL_HTTP_TOKEN", "consul-token", 1);
  EXPECT_EQ(Resolved(""), "consul-token");
}

TEST_F(TokenSettingsTest, AnUnreadableOrEmptyFileIsAnErrorNamingIt) {
  const std::string missing = dir_ + "/missing";
  Result<std::string> got = ResolveToken("", missing);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "cannot read the token file " + missing +
                                        " (from -token-file): No such file or directory");

  const std::string blank = File("blank", " \n\t\n");
  ::setenv("CONSUL_HTTP_TOKEN_FILE", blank.c_str(), 1);
  EXPECT_EQ(Resolved(""),
            "error: the token file " + blank + " (from $CONSUL_HTTP_TOKEN_FILE) is empty");

  // The first source given decides: a broken file is not skipped for a later one.
  ::setenv("TENURE_HTTP_TOKEN_FILE", missing.c_str(), 1);
  ::setenv("CONSUL_HTTP_TOKEN", "consul-token", 1);
  EXPECT_EQ(Resolved(""), "error: cannot read the token file " + missing +
                              " (from $TENURE_HTTP_TOKEN_FILE): No such file or directory");
}

TEST_F(TokenSettingsTest, ATokenThatCannotBeAHeaderValueIsRefused) {
  EXPECT_EQ(Resolved("", File("two-lines", "first\nsecond\n")),
            "error: the token file " + dir_ +
                "/two-lines (from -token-file) contains a control character (a line break?)");
  EXPECT_EQ(Resolved("a\rb"),
            "error: the token given with -token contains a control character (a line break?)");
}

// TLS settings: each flag, then $TENURE_X, then $CONSUL_X, setting by setting.
class TlsSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) ::unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
  }

  static net::TlsOptions Resolved(const TlsChoices& given = {}) {
    Result<net::TlsOptions> got = ResolveTls(given);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() ? *got : net::TlsOptions{};
  }

  static constexpr const char* kVariables[] = {
      "TENURE_CACERT",     "CONSUL_CACERT",     "TENURE_CLIENT_CERT",     "CONSUL_CLIENT_CERT",
      "TENURE_CLIENT_KEY", "CONSUL_CLIENT_KEY", "TENURE_TLS_SERVER_NAME", "CONSUL_TLS_SERVER_NAME",
      "TENURE_HTTP_SSL",   "CONSUL_HTTP_SSL",   "TENURE_HTTP_SSL_VERIFY", "CONSUL_HTTP_SSL_VERIFY"};
};

TEST_F(TlsSettingsTest, NothingGivenVerifiesWithTheSystemsCas) {
  net::TlsOptions tls = Resolved();
  EXPECT_EQ(tls.files.ca_file, "");
  EXPECT_EQ(tls.files.cert_file, "");
  EXPECT_EQ(tls.files.key_file, "");
  EXPECT_EQ(tls.files.server_name, "");
  EXPECT_TRUE(tls.files.verify);
  EXPECT_FALSE(tls.by_default);
}

TEST_F(TlsSettingsTest, ConsulsVariablesAreRead) {
  ::setenv("CONSUL_CACERT", "/consul/ca.pem", 1);
  ::setenv("CONSUL_CLIENT_CERT", "/consul/cert.pem", 1);
  ::setenv("CONSUL_CLIENT_KEY", "/consul/key.pem", 1);
  ::setenv("CONSUL_TLS_SERVER_NAME", "consul.example", 1);
  ::setenv("CONSUL_HTTP_SSL", "true", 1);
  ::setenv("CONSUL_HTTP_SSL_VERIFY", "false", 1);
  net::TlsOptions tls = Resolved();
  EXPECT_EQ(tls.files.ca_file, "/consul/ca.pem");
  EXPECT_EQ(tls.files.cert_file, "/consul/cert.pem");
  EXPECT_EQ(tls.files.key_file, "/consul/key.pem");
  EXPECT_EQ(tls.files.server_name, "consul.example");
  EXPECT_FALSE(tls.files.verify);
  EXPECT_TRUE(tls.by_default);
}

TEST_F(TlsSettingsTest, TenuresVariablesBeatConsulsAndFlagsBeatBoth) {
  ::setenv("CONSUL_CACERT", "/consul/ca.pem", 1);
  ::setenv("TENURE_CACERT", "/tenure/ca.pem", 1);
  ::setenv("CONSUL_CLIENT_CERT", "/consul/cert.pem", 1);
  ::setenv("CONSUL_CLIENT_KEY", "/consul/key.pem", 1);
  ::setenv("TENURE_TLS_SERVER_NAME", "tenure.example", 1);
  ::setenv("CONSUL_TLS_SERVER_NAME", "consul.example", 1);
  ::setenv("CONSUL_HTTP_SSL", "true", 1);
  ::setenv("TENURE_HTTP_SSL", "0", 1);
  ::setenv("CONSUL_HTTP_SSL_VERIFY", "false", 1);
  ::setenv("TENURE_HTTP_SSL_VERIFY", "T", 1);
  net::TlsOptions tls = Resolved();
  EXPECT_EQ(tls.files.ca_file, "/tenure/ca.pem");
  EXPECT_EQ(tls.files.cert_file, "/consul/cert.pem");  // each setting on its own
  EXPECT_EQ(tls.files.server_name, "tenure.example");
  EXPECT_FALSE(tls.by_default);
  EXPECT_TRUE(tls.files.verify);

  TlsChoices flags;
  flags.ca_file = "/flag/ca.pem";
  flags.cert_file = "/flag/cert.pem";
  flags.key_file = "/flag/key.pem";
  flags.server_name = "flag.example";
  flags.verify = false;
  flags.https = true;
  tls = Resolved(flags);
  EXPECT_EQ(tls.files.ca_file, "/flag/ca.pem");
  EXPECT_EQ(tls.files.cert_file, "/flag/cert.pem");
  EXPECT_EQ(tls.files.key_file, "/flag/key.pem");
  EXPECT_EQ(tls.files.server_name, "flag.example");
  EXPECT_FALSE(tls.files.verify);
  EXPECT_TRUE(tls.by_default);
}

TEST_F(TlsSettingsTest, AnEmptyVariableIsNotGiven) {
  ::setenv("TENURE_CACERT", "", 1);
  ::setenv("CONSUL_CACERT", "/consul/ca.pem", 1);
  ::setenv("TENURE_HTTP_SSL_VERIFY", "", 1);
  ::setenv("CONSUL_HTTP_SSL_VERIFY", "0", 1);
  net::TlsOptions tls = Resolved();
  EXPECT_EQ(tls.files.ca_file, "/consul/ca.pem");
  EXPECT_FALSE(tls.files.verify);
}

TEST_F(TlsSettingsTest, ABooleanThatIsNotOneIsRefusedNamingTheVariable) {
  ::setenv("CONSUL_HTTP_SSL_VERIFY", "flase", 1);
  Result<net::TlsOptions> got = ResolveTls({});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "$CONSUL_HTTP_SSL_VERIFY is \"flase\", not true or false");

  // A flag decides without the variable being read.
  TlsChoices flags;
  flags.verify = true;
  EXPECT_TRUE(Resolved(flags).files.verify);

  ::unsetenv("CONSUL_HTTP_SSL_VERIFY");
  ::setenv("TENURE_HTTP_SSL", "yes", 1);
  got = ResolveTls({});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "$TENURE_HTTP_SSL is \"yes\", not true or false");
}

}  // namespace
}  // namespace tenure::client
