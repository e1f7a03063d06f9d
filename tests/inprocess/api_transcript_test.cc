// Golden transcripts of the Consul API (etcd-raft's testdata style): each
// file in tests/inprocess/testdata runs against a fresh in-process server
// (ApiHarness) and every answer must match what the file says, byte for
// byte. A block is
//
//   # what it shows
//   PUT /v1/session/create            method and target
//   > X-Consul-Token: secret          request headers, if any
//   {"Name": "db"}                    the body, if any (to the ----)
//   ----
//   200 application/json              status and Content-Type
//   X-Consul-Index: 5                 the headers the handler set
//   {"ID":"<uuid-1>"}                 the body
//
// and ends at a blank line. UUIDs in answers are named <uuid-N> in order of
// appearance, and a request may use those names. Lines "advance 2s" move
// the server's clock. A first line "server -acl-enabled [-acl-default-policy
// deny] [-acl-initial-management SECRET] [-acl-enable-key-list-policy]"
// starts the server with ACLs. Every answer must carry
// X-Consul-Default-Acl-Policy with the server's default policy; the
// transcripts leave that header out. TENURE_REWRITE=1 rewrites the files
// with what the server answers now (then review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/duration.h"
#include "inprocess/api_harness.h"
#include "listen/wire.h"

namespace tenure::inprocess {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class Names {
 public:
  // Real UUIDs in `text` become <uuid-N>, new ones numbered in order.
  std::string Hide(const std::string& text) {
    static const std::regex kUuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    std::string out;
    auto begin = std::sregex_iterator(text.begin(), text.end(), kUuid);
    std::size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const std::string real = it->str();
      out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
      // Consul's fixed IDs of the built-ins stay as they are.
      if (real.rfind("00000000-0000-0000-0000-", 0) == 0) {
        out += real;
        last = static_cast<std::size_t>(it->position() + it->length());
        continue;
      }
      auto [slot, added] =
          names_.try_emplace(real, "<uuid-" + std::to_string(names_.size() + 1) + ">");
      if (added) reals_[slot->second] = real;
      out += slot->second;
      last = static_cast<std::size_t>(it->position() + it->length());
    }
    return out + text.substr(last);
  }
  // <uuid-N> names in `text` become the real UUIDs.
  std::string Reveal(std::string text) const {
    for (const auto& [name, real] : reals_) {
      for (std::size_t at; (at = text.find(name)) != std::string::npos;)
        text.replace(at, name.size(), real);
    }
    return text;
  }

 private:
  std::map<std::string, std::string> names_;  // real -> name
  std::map<std::string, std::string> reals_;  // name -> real
};

constexpr std::string_view kPolicyHeader = "X-Consul-Default-Acl-Policy";

// `default_policy` empty: the answer is the transport's (a target that does
// not parse never reaches the API), which carries no ACL header.
std::string Render(const http::HttpResponse& response, Names& names,
                   std::string_view default_policy) {
  std::string out = std::to_string(response.status);
  if (!response.content_type.empty()) out += " " + response.content_type;
  out += "\n";
  int policy_headers = 0;
  for (const auto& [name, value] : response.headers) {
    if (name == kPolicyHeader) {
      ++policy_headers;
      EXPECT_EQ(value, default_policy);
      continue;
    }
    out += name + ": " + names.Hide(value) + "\n";
  }
  EXPECT_EQ(policy_headers, default_policy.empty() ? 0 : 1)
      << "every answer of the API carries " << kPolicyHeader << " once";
  std::string body = names.Hide(response.body);
  const bool newline = !body.empty() && body.back() == '\n';
  if (newline) body.pop_back();
  if (!body.empty()) out += body + "\n";
  if (newline) out += "(ends with a newline)\n";
  return out;
}

// Runs a transcript; returns it with the answers the server gave.
// The settings of a first line "server -acl-enabled ...".
server::AclConfig ServerLine(const std::string& line) {
  server::AclConfig acl;
  std::istringstream words(line.substr(7));
  for (std::string word; words >> word;) {
    if (word == "-acl-enabled") {
      acl.enabled = true;
    } else if (word == "-acl-enable-key-list-policy") {
      acl.enable_key_list_policy = true;
    } else if (word == "-acl-default-policy") {
      std::string policy;
      words >> policy;
      acl.default_policy =
          policy == "deny" ? acl::DefaultPolicy::kDeny : acl::DefaultPolicy::kAllow;
    } else if (word == "-acl-initial-management") {
      words >> acl.initial_management;
    } else {
      ADD_FAILURE() << "unknown server setting " << word;
    }
  }
  return acl;
}

std::string RunTranscript(const std::string& text) {
  std::vector<std::string> lines = Lines(text);
  std::string out;
  std::size_t i = 0;
  server::AclConfig acl;
  if (!lines.empty() && lines[0].rfind("server ", 0) == 0) {
    acl = ServerLine(lines[0]);
    out += lines[0] + "\n";
    ++i;
  }
  const std::string default_policy =
      acl.default_policy == acl::DefaultPolicy::kDeny ? "deny" : "allow";
  ApiHarness harness(acl);
  Names names;
  while (i < lines.size()) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] == '#') {
      out += line + "\n";
      ++i;
      continue;
    }
    if (line.rfind("advance ", 0) == 0) {
      auto ns = ParseGoDuration(line.substr(8));
      EXPECT_TRUE(ns.ok()) << line;
      if (ns.ok()) {
        harness.clock().mono_ms += *ns / kNsPerMs;
        harness.clock().unix_ms = harness.clock().unix_ms + *ns / kNsPerMs;
      }
      out += line + "\n";
      ++i;
      continue;
    }
    // A request block.
    const std::size_t space = line.find(' ');
    const std::string method = line.substr(0, space);
    const std::string target = names.Reveal(line.substr(space + 1));
    out += line + "\n";
    ++i;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    bool first_body_line = true;
    while (i < lines.size() && lines[i] != "----") {
      out += lines[i] + "\n";
      if (lines[i].rfind("> ", 0) == 0) {
        const std::string header = lines[i].substr(2);
        const std::size_t colon = header.find(": ");
        headers.emplace_back(header.substr(0, colon), names.Reveal(header.substr(colon + 2)));
      } else {
        body += (first_body_line ? "" : "\n") + names.Reveal(lines[i]);
        first_body_line = false;
      }
      ++i;
    }
    EXPECT_LT(i, lines.size()) << "a request without ---- after it: " << line;
    out += "----\n";
    ++i;
    while (i < lines.size() && !lines[i].empty()) ++i;  // the expected answer, replaced
    SCOPED_TRACE(line);
    http::HttpRequest parsed;
    const bool reaches_api = listen::wire::ParseTarget(target, &parsed).ok();
    out +=
        Render(harness.Do(method, target, body, headers), names, reaches_api ? default_policy : "");
  }
  return out;
}

std::vector<std::string> TranscriptFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(TENURE_TRANSCRIPTS_DIR)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ApiTranscriptTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ApiTranscriptTest, AnswersAsRecorded) {
  const std::filesystem::path path = std::filesystem::path(TENURE_TRANSCRIPTS_DIR) / GetParam();
  std::ifstream in(path);
  const std::string expected((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  const std::string actual = RunTranscript(expected);
  if (std::getenv("TENURE_REWRITE") != nullptr) {
    std::ofstream(path) << actual;
    return;
  }
  EXPECT_EQ(actual, expected) << "rerun with TENURE_REWRITE=1 and review the diff of " << path;
}

INSTANTIATE_TEST_SUITE_P(Transcripts, ApiTranscriptTest, ::testing::ValuesIn(TranscriptFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name =
                               param_info.param.substr(0, param_info.param.size() - 4);
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tenure::inprocess
