// agent::ApplyConfigText and LoadConfigPaths: `tenure server`'s config
// files. Every key of the settings list, Consul's nesting, the order files
// win in, and every refusal with its file and line (and nothing changed).
#include "agent/config_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/config_keys.h"
#include "agent/config_load.h"
#include "unit/common/temp_dir.h"

namespace tenure::agent {
namespace {

std::string Refusal(std::string_view text) {
  FileConfig loaded;
  Status applied = ApplyConfigText("/etc/tenure/a.json", text, &loaded);
  if (applied.ok()) return "accepted";
  EXPECT_EQ(applied.code(), Code::kInvalidArgument);
  return std::string(applied.message());
}

// A JSON value for the setting that differs from its default.
std::string OtherValue(const Setting& setting) {
  switch (setting.type) {
    case SettingType::kBool:  // most are off by default; fair_queue is on
      return SettingValue(setting, AgentConfig{}) == "true" ? "false" : "true";
    case SettingType::kUint64:
    case SettingType::kInt:
      return "7";
    case SettingType::kString:
    case SettingType::kList:
      return "\"x-" + std::string(setting.key) + "\"";
  }
  return "";
}

TEST(ConfigFileTest, EveryKeySetsItsField) {
  for (const Setting& setting : ServerSettings()) {
    std::vector<std::string> paths = {std::string(setting.key)};
    paths.insert(paths.end(), setting.nested.begin(), setting.nested.end());
    for (const std::string& path : paths) {
      // "acl.tokens.initial_management" is {"acl": {"tokens": {"initial_management": V}}}.
      std::string text = OtherValue(setting);
      std::string rest = path;
      for (std::size_t dot; (dot = rest.rfind('.')) != std::string::npos;) {
        text = "{\"" + rest.substr(dot + 1) + "\": " + text + "}";
        rest.resize(dot);
      }
      text = "{\"" + rest + "\": " + text + "}";
      FileConfig loaded;
      Status applied = ApplyConfigText("a.json", text, &loaded);
      ASSERT_TRUE(applied.ok()) << path << ": " << applied.ToString();
      std::string expected = OtherValue(setting);
      if (expected.front() == '"') expected = expected.substr(1, expected.size() - 2);
      EXPECT_EQ(SettingValue(setting, loaded.config), expected) << path;
      EXPECT_NE(SettingValue(setting, AgentConfig{}), expected) << path << ": the default?";
      EXPECT_EQ(loaded.origins.at(std::string(setting.key)).path, path);
    }
  }
}

TEST(ConfigFileTest, ConsulsNesting) {
  FileConfig loaded;
  ASSERT_TRUE(ApplyConfigText("a.json", R"({
    "acl": {"enabled": true, "default_policy": "deny", "enable_key_list_policy": true,
            "tokens": {"initial_management": "0b1d4a0e-3c7b-4e0f-9a5d-1f2e3d4c5b6a"}},
    "tls": {"defaults": {"ca_file": "ca.pem", "cert_file": "s.pem", "key_file": "s.key"},
            "https": {"verify_incoming": true}},
    "join": ["10.0.0.1:8300", "10.0.0.2:8300"]
  })",
                              &loaded)
                  .ok());
  const AgentConfig& c = loaded.config;
  EXPECT_TRUE(c.acl_enabled);
  EXPECT_EQ(c.acl_default_policy, "deny");
  EXPECT_TRUE(c.acl_enable_key_list_policy);
  EXPECT_EQ(c.acl_initial_management, "0b1d4a0e-3c7b-4e0f-9a5d-1f2e3d4c5b6a");
  EXPECT_EQ(c.tls_ca_file, "ca.pem");
  EXPECT_EQ(c.tls_cert_file, "s.pem");
  EXPECT_EQ(c.tls_key_file, "s.key");
  EXPECT_TRUE(c.tls_verify_incoming);
  EXPECT_EQ(c.join, "10.0.0.1:8300,10.0.0.2:8300");
  EXPECT_EQ(loaded.origins.at("acl_initial_management").line, 3);
}

TEST(ConfigFileTest, EveryBadFileIsRefusedWithItsLine) {
  EXPECT_EQ(Refusal("{\n  \"data_dir\": \"/d\",\n  \"htp_addr\": \"x\"\n}"),
            "/etc/tenure/a.json:3: unknown key \"htp_addr\" (did you mean \"http_addr\"?)");
  EXPECT_EQ(Refusal("{\"color\": 1}"), "/etc/tenure/a.json:1: unknown key \"color\"");
  EXPECT_EQ(Refusal("{\"ports\": {\"http\": 8500}}"),
            "/etc/tenure/a.json:1: unknown key \"ports\" (tenure takes http_addr and https_addr "
            "as HOST:PORT)");
  EXPECT_EQ(Refusal("{\"server\": true}"),
            "/etc/tenure/a.json:1: unknown key \"server\" (every tenure server is a raft member: "
            "leave it out)");
  EXPECT_EQ(Refusal("{\"node\": \"n1\"}"),
            "/etc/tenure/a.json:1: unknown key \"node\" (the node's name is node_name)");
  EXPECT_EQ(Refusal("{\"acl\": {\n\"enabeld\": true}}"),
            "/etc/tenure/a.json:2: unknown key \"acl.enabeld\" (did you mean \"acl.enabled\"?)");
  EXPECT_EQ(Refusal("{\"acl\": true}"),
            "/etc/tenure/a.json:1: \"acl\" must be an object, got a boolean");
  EXPECT_EQ(Refusal("{\"acl_enabled\": \"true\"}"),
            "/etc/tenure/a.json:1: acl_enabled: expected true or false, got a string (write true "
            "without quotes)");
  EXPECT_EQ(Refusal("{\"acl\": {\"enabled\": 1}}"),
            "/etc/tenure/a.json:1: acl.enabled: expected true or false, got a number (1)");
  EXPECT_EQ(Refusal("{\"http_addr\": 8500}"),
            "/etc/tenure/a.json:1: http_addr: expected a string, got a number (8500)");
  EXPECT_EQ(Refusal("{\"data_dir\": null}"),
            "/etc/tenure/a.json:1: data_dir: expected a string, got null");
  EXPECT_EQ(Refusal("{\"node_id\": \"3\"}"),
            "/etc/tenure/a.json:1: node_id: expected a whole number from 0 to "
            "18446744073709551615, got a string");
  EXPECT_EQ(Refusal("{\"node_id\": 1.5}"),
            "/etc/tenure/a.json:1: node_id: expected a whole number from 0 to "
            "18446744073709551615, got 1.5");
  EXPECT_EQ(Refusal("{\"node_id\": 18446744073709551616}"),
            "/etc/tenure/a.json:1: node_id: expected a whole number from 0 to "
            "18446744073709551615, got 18446744073709551616");
  EXPECT_EQ(Refusal("{\"session_ttl_multiplier\": 1000000001}"),
            "/etc/tenure/a.json:1: session_ttl_multiplier: expected a whole number from 0 to "
            "1000000000, got 1000000001");
  EXPECT_EQ(Refusal("{\"join\": {\"a\": 1}}"),
            "/etc/tenure/a.json:1: join: expected a string or an array of strings, got an "
            "object");
  EXPECT_EQ(Refusal("{\"join\": [\n\"a:1\",\n2]}"),
            "/etc/tenure/a.json:3: join: expected an array of strings, found a number in it");
  EXPECT_EQ(Refusal("{\"join\": [\"a:1,b:2\"]}"),
            "/etc/tenure/a.json:1: join: one address per item, got \"a:1,b:2\"");
  EXPECT_EQ(Refusal("{\n\"acl_enabled\": true,\n\"acl\": {\"enabled\": false}}"),
            "/etc/tenure/a.json:3: \"acl.enabled\" sets acl_enabled again (first at line 2 as "
            "\"acl_enabled\")");
  EXPECT_EQ(Refusal("{\"data_dir\": \"/a\",\n\"data_dir\": \"/b\"}"),
            "/etc/tenure/a.json:2: duplicate key \"data_dir\" (first at line 1)");
  EXPECT_EQ(Refusal("[\"data_dir\"]"),
            "/etc/tenure/a.json:1: expected a JSON object of settings, got an array");
  EXPECT_EQ(Refusal("{\"data_dir\": \"/a\",}"),
            "/etc/tenure/a.json:1: unexpected '}': expected a key in double quotes");
}

TEST(ConfigFileTest, ABadFileChangesNothing) {
  FileConfig loaded;
  ASSERT_TRUE(ApplyConfigText("a.json", R"({"data_dir": "/a", "node_name": "n1"})", &loaded).ok());
  EXPECT_FALSE(
      ApplyConfigText("b.json", "{\"data_dir\": \"/b\",\n\"node_id\": \"x\"}", &loaded).ok());
  EXPECT_EQ(loaded.config.data_dir, "/a");
  EXPECT_EQ(loaded.config.node_id, 1u);
  EXPECT_EQ(loaded.origins.at("data_dir").file, "a.json");
}

TEST(ConfigFileTest, ALaterFileWins) {
  FileConfig loaded;
  ASSERT_TRUE(ApplyConfigText("a.json", R"({"data_dir": "/a", "node_name": "n1"})", &loaded).ok());
  ASSERT_TRUE(ApplyConfigText("b.json", "{\n\"data_dir\": \"/b\"}", &loaded).ok());
  EXPECT_EQ(loaded.config.data_dir, "/b");
  EXPECT_EQ(loaded.config.node_name, "n1");
  EXPECT_EQ(loaded.origins.at("data_dir").file, "b.json");
  EXPECT_EQ(loaded.origins.at("data_dir").line, 2);
  EXPECT_EQ(loaded.origins.at("node_name").file, "a.json");
}

TEST(ConfigFileTest, ResolveMessagesSayWhichFileSetTheFlag) {
  FileConfig loaded;
  ASSERT_TRUE(
      ApplyConfigText("a.json", "{\"data_dir\": \"/a\",\n\"http_addr\": \"nope\"}", &loaded).ok());
  Result<AgentPlan> plan = ResolveAgentConfig(loaded.config);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(WithOrigins(plan.status().message(), loaded),
            "-http-addr: expected host:port, got \"nope\" (no port) (-http-addr set by "
            "http_addr at a.json:2)");
  ASSERT_TRUE(
      ApplyConfigText("b.json", R"({"join": "h:1", "bootstrap_peers": "1@h:2"})", &loaded).ok());
  EXPECT_EQ(WithOrigins("-join and -bootstrap-peers exclude each other", loaded),
            "-join and -bootstrap-peers exclude each other (-join set by join at b.json:1; "
            "-bootstrap-peers set by bootstrap_peers at b.json:1)");
  // -node is not -node-id, and a flag no file set gets no note.
  EXPECT_EQ(WithOrigins("-node-id must be positive", loaded), "-node-id must be positive");
}

// A fresh directory under $TMPDIR, removed at the end.
class ConfigDirTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    return temp_.Write(name, text);
  }

  std::string Load(const std::vector<ConfigPath>& paths, FileConfig* loaded) {
    Status status = LoadConfigPaths(paths, loaded);
    return status.ok() ? "ok" : std::string(status.message());
  }

  testutil::TempDir temp_{"tenure-config"};
  const std::string dir_ = temp_.path();
};

TEST_F(ConfigDirTest, ADirectorysJsonFilesInLexicalOrder) {
  ASSERT_EQ(::mkdir((dir_ + "/d").c_str(), 0700), 0);
  Write("d/2-b.json", R"({"node_name": "from-2", "datacenter": "dc-2"})");
  Write("d/10-a.json", R"({"node_name": "from-10", "data_dir": "/ten"})");  // "10" < "2"
  Write("d/README", "not json, not read");
  Write("d/x.json.bak", "not read either");
  ASSERT_EQ(::mkdir((dir_ + "/d/sub.json").c_str(), 0700), 0);  // a directory: skipped
  FileConfig loaded;
  ASSERT_EQ(Load({{ConfigPath::Kind::kDir, dir_ + "/d"}}, &loaded), "ok");
  EXPECT_EQ(loaded.config.node_name, "from-2");
  EXPECT_EQ(loaded.config.data_dir, "/ten");
  EXPECT_EQ(loaded.config.datacenter, "dc-2");
  EXPECT_EQ(loaded.origins.at("node_name").file, dir_ + "/d/2-b.json");
}

TEST_F(ConfigDirTest, FilesAndDirectoriesInTheOrderGiven) {
  ASSERT_EQ(::mkdir((dir_ + "/d").c_str(), 0700), 0);
  Write("d/a.json", R"({"node_name": "dir", "datacenter": "dc-dir"})");
  const std::string first = Write("first.json", R"({"node_name": "first", "data_dir": "/f"})");
  const std::string last = Write("last.json", R"({"datacenter": "dc-last"})");
  FileConfig loaded;
  ASSERT_EQ(Load({{ConfigPath::Kind::kFile, first},
                  {ConfigPath::Kind::kDir, dir_ + "/d"},
                  {ConfigPath::Kind::kFile, last}},
                 &loaded),
            "ok");
  EXPECT_EQ(loaded.config.node_name, "dir");
  EXPECT_EQ(loaded.config.datacenter, "dc-last");
  EXPECT_EQ(loaded.config.data_dir, "/f");
}

TEST_F(ConfigDirTest, BadPathsAreNamed) {
  FileConfig loaded;
  EXPECT_EQ(Load({{ConfigPath::Kind::kFile, dir_ + "/none.json"}}, &loaded),
            dir_ + "/none.json: No such file or directory");
  EXPECT_EQ(Load({{ConfigPath::Kind::kFile, dir_}}, &loaded),
            dir_ + ": is a directory (give it with -config-dir)");
  const std::string file = Write("a.json", "{}");
  EXPECT_EQ(Load({{ConfigPath::Kind::kDir, file}}, &loaded),
            file + ": not a directory (give a file with -config-file)");
  EXPECT_EQ(Load({{ConfigPath::Kind::kFile, "/dev/null"}}, &loaded),
            "/dev/null: not a regular file");
  ASSERT_EQ(::symlink((dir_ + "/gone").c_str(), (dir_ + "/b.json").c_str()), 0);
  EXPECT_EQ(Load({{ConfigPath::Kind::kDir, dir_}}, &loaded),
            dir_ + "/b.json: No such file or directory");
  ::unlink((dir_ + "/b.json").c_str());
  Write("c.json", "{\n\"nope\": 1}");
  EXPECT_EQ(Load({{ConfigPath::Kind::kEither, dir_}}, &loaded),
            dir_ + "/c.json:2: unknown key \"nope\"");
  Write("c.json", std::string(kMaxConfigFileBytes + 1, ' '));
  EXPECT_EQ(Load({{ConfigPath::Kind::kEither, dir_ + "/c.json"}}, &loaded),
            dir_ + "/c.json: larger than 1 MiB: not a config file");
}

}  // namespace
}  // namespace tenure::agent
