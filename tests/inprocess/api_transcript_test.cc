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
// the server's clock. TENURE_REWRITE=1 rewrites the files with what the
// server answers now (then review the diff).
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

std::string Render(const http::HttpResponse& response, Names& names) {
  std::string out = std::to_string(response.status);
  if (!response.content_type.empty()) out += " " + response.content_type;
  out += "\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + names.Hide(value) + "\n";
  std::string body = names.Hide(response.body);
  const bool newline = !body.empty() && body.back() == '\n';
  if (newline) body.pop_back();
  if (!body.empty()) out += body + "\n";
  if (newline) out += "(ends with a newline)\n";
  return out;
}

// Runs a transcript; returns it with the answers the server gave.
std::string RunTranscript(const std::string& text) {
  ApiHarness harness;
  Names names;
  std::vector<std::string> lines = Lines(text);
  std::string out;
  std::size_t i = 0;
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
    out += Render(harness.Do(method, target, body, headers), names);
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
