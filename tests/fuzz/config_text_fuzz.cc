// Fuzz target: the one reader of configuration-shaped text
// (common/config_text.h), HCL or JSON, under the options of each caller:
// ACL rules come over the HTTP API, config files from disk. The first byte
// picks the form (bit 0) and the options (bits 1-2: the config files', the
// rules', the defaults, a nesting limit of 2); the rest is the text. The
// same text reads to the same tree or the same error; every position the
// reader reports lies in the text and agrees with its line and column;
// nothing nests deeper than the limit. The config files' own entry points
// (agent/config_text.h) run on the same text and answer "NAME:LINE: why".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/config_text.h"
#include "common/config_text.h"
#include "common/limits.h"
#include "fuzz_check.h"

namespace {

using tenure::ConfigMember;
using tenure::ConfigValue;
using tenure::TextPosition;

void CheckPosition(std::string_view text, const TextPosition& at) {
  FUZZ_CHECK(at.offset <= text.size());
  const TextPosition expected = tenure::PositionOf(text, at.offset);
  FUZZ_CHECK(at.line == expected.line);
  FUZZ_CHECK(at.column == expected.column);
}

// Checks every position in the tree; returns its depth (a scalar is 0).
std::size_t CheckTree(std::string_view text, const ConfigValue& value) {
  CheckPosition(text, value.at);
  std::size_t deepest = 0;
  for (const ConfigValue& item : value.items) {
    const std::size_t d = CheckTree(text, item) + 1;
    if (d > deepest) deepest = d;
  }
  for (const ConfigMember& member : value.members) {
    CheckPosition(text, member.at);
    const std::size_t d = CheckTree(text, member.value) + 1;
    if (d > deepest) deepest = d;
  }
  return deepest;
}

std::string Dump(const ConfigValue& value) {
  std::string out = std::to_string(static_cast<int>(value.kind)) + "@" +
                    std::to_string(value.at.offset) + ":" + value.text + "(";
  for (const ConfigValue& item : value.items) out += Dump(item) + ",";
  for (const ConfigMember& member : value.members) {
    out += member.name + "@" + std::to_string(member.at.offset) +
           (member.label ? "'" + *member.label : "") + "=" + Dump(member.value) + ",";
  }
  return out + ")";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > tenure::limits::kAclRulesBytesMax + 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool hcl = (data[0] & 1) != 0;
  const int preset = (data[0] >> 1) & 3;
  std::size_t max_depth = 64;
  ConfigValue tree;
  ConfigValue again;
  bool ok = false;
  if (hcl) {
    tenure::HclReadOptions options;
    if (preset == 0) {
      options.skip_byte_order_mark = true;
      options.merge_repeated_blocks = true;
      options.lexer.leading_zeros = false;
    } else if (preset == 1) {
      options.max_depth = tenure::limits::kAclRulesNestingMax;
      options.lexer.octal_escapes = true;
      options.top_level_shape = [](std::string_view name) -> std::optional<tenure::HclItemShape> {
        if (name.empty() || name[0] == 'x') return std::nullopt;
        return name[0] == 'k' ? tenure::HclItemShape::kAttributeOrLabeledBlock
                              : tenure::HclItemShape::kAttribute;
      };
    } else if (preset == 3) {
      options.max_depth = 2;
    }
    max_depth = options.max_depth;
    tenure::HclReadError error;
    tenure::HclReadError error_again;
    ok = tenure::ReadHcl(text, options, &tree, &error);
    FUZZ_CHECK(ok == tenure::ReadHcl(text, options, &again, &error_again));
    if (!ok) {
      FUZZ_CHECK(error.kind == error_again.kind);
      FUZZ_CHECK(error.at.offset == error_again.at.offset);
      CheckPosition(text, error.at);
    }
  } else {
    tenure::JsonReadOptions options;
    if (preset == 0) {
      options.skip_byte_order_mark = true;
      options.refuse_duplicate_names = true;
      options.refuse_digit_after_zero = true;
    } else if (preset == 1) {
      options.max_depth = tenure::limits::kAclRulesNestingMax - 1;
      options.depth_counts_scalars = false;
      options.check_utf8 = true;
      options.nul_ends_text = true;
      options.finite_numbers_only = true;
    } else if (preset == 3) {
      options.max_depth = 2;
    }
    // A scalar may sit one level below the deepest object or list.
    max_depth = options.max_depth + (options.depth_counts_scalars ? 0 : 1);
    tenure::JsonReadError error;
    tenure::JsonReadError error_again;
    ok = tenure::ReadJson(text, options, &tree, &error);
    FUZZ_CHECK(ok == tenure::ReadJson(text, options, &again, &error_again));
    if (!ok) {
      FUZZ_CHECK(error.kind == error_again.kind);
      FUZZ_CHECK(error.at.offset == error_again.at.offset);
      CheckPosition(text, error.at);
      if (error.found == tenure::JsonTokenKind::kBad) CheckPosition(text, error.lex.at);
    }
  }
  if (ok) {
    // An HCL text is one object of its items, one level above what it holds.
    FUZZ_CHECK(CheckTree(text, tree) <= max_depth + (hcl ? 1 : 0));
    FUZZ_CHECK(Dump(tree) == Dump(again));
  }

  auto config = hcl ? tenure::agent::ParseHclWithLines("f", text)
                    : tenure::agent::ParseJsonWithLines("f", text);
  if (!config.ok()) {
    FUZZ_CHECK(config.status().message().substr(0, 2) == "f:");
    FUZZ_CHECK(config.status().message().size() > 4);
  }
  return 0;
}
