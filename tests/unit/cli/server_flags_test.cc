// `tenure server`'s flags and config files together (cli/server_flags.h):
// every flag has its key, docs/config.md lists them all, and a flag given
// on the command line wins over every file.
#include "cli/server_flags.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "agent/config_keys.h"
#include "unit/common/temp_dir.h"

namespace tenure::cli {
namespace {

TEST(ServerFlagsTest, EveryFlagHasItsKey) {
  agent::AgentConfig config;
  Flags flags("server");
  RegisterServerFlags(&flags, &config);
  const std::string usage = flags.Usage();
  std::set<std::string> keys;
  for (const agent::Setting& setting : agent::ServerSettings()) {
    std::string derived(setting.flag);
    for (char& c : derived) c = c == '-' ? '_' : c;
    // -node's key is node_name, as in Consul's config file.
    if (derived == "node") derived = "node_name";
    EXPECT_EQ(setting.key, derived);
    EXPECT_TRUE(keys.insert(std::string(setting.key)).second) << setting.key << " twice";
    const std::string option = "  -" + std::string(setting.flag);
    EXPECT_TRUE(usage.find(option + "\n") != std::string::npos ||
                usage.find(option + "=<value>\n") != std::string::npos)
        << option;
    EXPECT_EQ(agent::FindSettingByFlag(setting.flag), &setting);
    EXPECT_EQ(agent::FindSettingByPath(setting.key), &setting);
  }
  // No two settings write the same field.
  for (const agent::Setting& a : agent::ServerSettings()) {
    for (const agent::Setting& b : agent::ServerSettings()) {
      if (&a != &b) {
        EXPECT_FALSE(a.field == b.field) << a.key << " and " << b.key;
      }
    }
  }
}

TEST(ServerFlagsTest, DocsConfigListsEveryKey) {
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/../../docs/config.md");
  ASSERT_TRUE(file.good()) << "missing docs/config.md";
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  for (const agent::Setting& setting : agent::ServerSettings()) {
    const std::string row = "| `" + std::string(setting.key) + "` | `-" +
                            std::string(setting.flag) + "` | " +
                            std::string(agent::SettingTypeName(setting.type)) + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/config.md has no row " << row;
    for (const std::string& nested : setting.nested) {
      EXPECT_NE(doc.find("`" + nested + "`"), std::string::npos)
          << "docs/config.md does not mention " << nested;
    }
  }
}

class ServerConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    return temp_.Write(name, text);
  }

  // `tenure server ARGS` up to ResolveAgentConfig.
  Result<agent::FileConfig> Load(const std::vector<std::string>& args) {
    agent::AgentConfig flagged;
    Flags flags("server");
    RegisterServerFlags(&flags, &flagged);
    std::vector<agent::ConfigPath> paths;
    RegisterConfigPathFlags(&flags, &paths);
    TENURE_RETURN_IF_ERROR(flags.Parse(args));
    return LoadServerConfig(paths, flags, flagged);
  }

  testutil::TempDir temp_{"tenure-config"};
  const std::string dir_ = temp_.path();
};

TEST_F(ServerConfigTest, FlagsWinOverFilesAndLaterFilesOverEarlier) {
  const std::string a = Write("a.json", R"({"data_dir": "/a", "node_name": "a", "datacenter": "dc9",
                                           "http_addr": "127.0.0.1:1"})");
  ASSERT_EQ(::mkdir((dir_ + "/d").c_str(), 0700), 0);
  Write("d/x.json", R"({"node_name": "d", "acl": {"enabled": true}})");
  const std::string b = Write("b.json", R"({"node_name": "b", "raft_addr": "127.0.0.1:2"})");
  // -datacenter is given its default: given is given, it still wins.
  Result<agent::FileConfig> loaded =
      Load({"-config-file", a, "-http-addr", "127.0.0.1:3", "-config-dir=" + dir_ + "/d",
            "-config-file", b, "-datacenter", "dc1", "-acl-enabled=false"});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const agent::AgentConfig& c = loaded->config;
  EXPECT_EQ(c.data_dir, "/a");
  EXPECT_EQ(c.node_name, "b");
  EXPECT_EQ(c.http_addr, "127.0.0.1:3");
  EXPECT_EQ(c.raft_addr, "127.0.0.1:2");
  EXPECT_EQ(c.datacenter, "dc1");
  EXPECT_FALSE(c.acl_enabled);
  EXPECT_EQ(loaded->origins.count("http_addr"), 0u);  // the flag's now
  EXPECT_EQ(loaded->origins.at("node_name").file, b);
}

TEST_F(ServerConfigTest, NoFilesIsTheFlagsAlone) {
  Result<agent::FileConfig> loaded = Load({"-data-dir", "/x", "-node-id", "3"});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->config.data_dir, "/x");
  EXPECT_EQ(loaded->config.node_id, 3u);
  EXPECT_EQ(loaded->config.http_addr, "127.0.0.1:8500");
  EXPECT_TRUE(loaded->origins.empty());
}

TEST_F(ServerConfigTest, AnEmptyPathIsBadUsage) {
  Result<agent::FileConfig> loaded = Load({"-config-file="});
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(), "invalid value \"\" for flag -config-file: an empty path");
}

}  // namespace
}  // namespace tenure::cli
