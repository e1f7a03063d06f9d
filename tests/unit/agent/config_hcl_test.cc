// agent::ParseHclWithLines, and HCL files through ApplyConfigText: Consul's
// other config format gives the same settings and the same kind of
// "NAME:LINE: why" refusals as JSON.
#include <gtest/gtest.h>

#include <string>

#include "agent/config_file.h"
#include "agent/config_text.h"

namespace tenure::agent {
namespace {

std::string Refusal(std::string_view text) {
  FileConfig loaded;
  Status applied = ApplyConfigText("/etc/tenure/a.hcl", text, &loaded);
  if (applied.ok()) return "accepted";
  EXPECT_EQ(applied.code(), Code::kInvalidArgument);
  return std::string(applied.message());
}

TEST(ConfigHclTest, ConsulsHclFileGivesTheSameSettings) {
  FileConfig loaded;
  Status applied = ApplyConfigText("server.hcl", R"(# tenure, as Consul would write it
data_dir  = "/var/lib/tenure"
node_name = "n1"   // the node
node_id   = 3
join      = ["10.0.0.1:8300", "10.0.0.2:8300",]
/* ACLs,
   deny by default */
acl {
  enabled        = true
  default_policy = "deny"
  tokens {
    initial_management = "0b1d4a0e-3c7b-4e0f-9a5d-1f2e3d4c5b6a"
  }
}
acl { enable_key_list_policy = true }
tls = { defaults = { cert_file = "s.pem", key_file = "s\x2ekey" } }
"http_addr" = "0.0.0.0:8500"
)",
                                   &loaded);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  const AgentConfig& c = loaded.config;
  EXPECT_EQ(c.data_dir, "/var/lib/tenure");
  EXPECT_EQ(c.node_name, "n1");
  EXPECT_EQ(c.node_id, 3u);
  EXPECT_EQ(c.join, "10.0.0.1:8300,10.0.0.2:8300");
  EXPECT_TRUE(c.acl_enabled);
  EXPECT_EQ(c.acl_default_policy, "deny");
  EXPECT_EQ(c.acl_initial_management, "0b1d4a0e-3c7b-4e0f-9a5d-1f2e3d4c5b6a");
  EXPECT_TRUE(c.acl_enable_key_list_policy);
  EXPECT_EQ(c.tls_cert_file, "s.pem");
  EXPECT_EQ(c.tls_key_file, "s.key");
  EXPECT_EQ(c.http_addr, "0.0.0.0:8500");
  EXPECT_EQ(loaded.origins.at("acl_initial_management").line, 12);
  EXPECT_EQ(loaded.origins.at("acl_enable_key_list_policy").line, 15);
  EXPECT_EQ(loaded.origins.at("http_addr").line, 17);
}

TEST(ConfigHclTest, AnEmptyFileSetsNothing) {
  FileConfig loaded;
  ASSERT_TRUE(ApplyConfigText("a.hcl", "# nothing yet\n", &loaded).ok());
  EXPECT_TRUE(loaded.origins.empty());
}

TEST(ConfigHclTest, EveryBadInputNamesItsLine) {
  EXPECT_EQ(Refusal("data_dir = \"/d\"\nhtp_addr = \"x\"\n"),
            "/etc/tenure/a.hcl:2: unknown key \"htp_addr\" (did you mean \"http_addr\"?)");
  EXPECT_EQ(Refusal("acl {\n  enabled = \"true\"\n}"),
            "/etc/tenure/a.hcl:2: acl.enabled: expected true or false, got a string (write true "
            "without quotes)");
  EXPECT_EQ(Refusal("data_dir = \"/a\"\ndata_dir = \"/b\""),
            "/etc/tenure/a.hcl:2: duplicate key \"data_dir\" (first at line 1)");
  EXPECT_EQ(Refusal("acl { enabled = true }\nacl {\n enabled = false }"),
            "/etc/tenure/a.hcl:3: duplicate key \"enabled\" (first at line 1)");
  EXPECT_EQ(Refusal("acl_enabled = true\nacl { enabled = true }"),
            "/etc/tenure/a.hcl:2: \"acl.enabled\" sets acl_enabled again (first at line 1 as "
            "\"acl_enabled\")");
  EXPECT_EQ(Refusal("service \"web\" {\n}"),
            "/etc/tenure/a.hcl:1: a block label (service \"web\" { }) is not a setting of tenure "
            "server");
  EXPECT_EQ(Refusal("acl {\n enabled = true\n"), "/etc/tenure/a.hcl:1: this '{' is never closed");
  EXPECT_EQ(Refusal("join = [\"a:1\"\n"), "/etc/tenure/a.hcl:1: this '[' is never closed");
  EXPECT_EQ(Refusal("join = [\"a:1\" \"b:2\"]"),
            "/etc/tenure/a.hcl:1: unexpected \"b:2\": expected ',' or ']'");
  EXPECT_EQ(Refusal("data_dir \"/d\""),
            "/etc/tenure/a.hcl:1: a block label (data_dir \"/d\" { }) is not a setting of tenure "
            "server");
  EXPECT_EQ(Refusal("data_dir =\n"),
            "/etc/tenure/a.hcl:2: unexpected end of file: expected a value");
  EXPECT_EQ(Refusal("data_dir = /d"), "/etc/tenure/a.hcl:1: unexpected '/'");
  EXPECT_EQ(Refusal("data_dir = \"/d\nx\""),
            "/etc/tenure/a.hcl:1: unterminated string (it must end on its line)");
  EXPECT_EQ(Refusal("data_dir = \"\\q\""),
            "/etc/tenure/a.hcl:1: bad escape in a string: backslash and 'q'");
  EXPECT_EQ(Refusal("data_dir = <<EOF\n/d\nEOF\n"),
            "/etc/tenure/a.hcl:1: heredocs (<<) are not read: quote it");
  EXPECT_EQ(Refusal("node_id = 012"), "/etc/tenure/a.hcl:1: bad number 012");
  EXPECT_EQ(Refusal("node_id = 1x"), "/etc/tenure/a.hcl:1: bad number 1x");
  EXPECT_EQ(Refusal("\n/* open"), "/etc/tenure/a.hcl:2: this /* comment is never closed");
  EXPECT_EQ(Refusal("data_dir = null"), "/etc/tenure/a.hcl:1: unexpected null: expected a value");
  EXPECT_EQ(Refusal("= 1"), "/etc/tenure/a.hcl:1: unexpected '=': expected a key");
}

}  // namespace
}  // namespace tenure::agent
