#include "state/short_text.h"

#include <array>
#include <new>

#include "state/numbered_session.h"

namespace tenure::state {
namespace {

// Names that every session made by one of the ports carries: each held
// once (decision 0058).
constexpr std::array<std::string_view, 2> kConstantTexts = {kEtcdLeaseSessionName, kZkSessionName};

}  // namespace

const std::array<const ShortText::Block*, 2>& ShortText::Constants() {
  static_assert(kConstantTexts.size() == 2);
  // Made on first use and never freed: a few bytes for the process's life.
  static const std::array<const Block*, 2> blocks = [] {
    std::array<const Block*, 2> made{};
    for (std::size_t i = 0; i < made.size(); ++i) {
      const std::string_view text = kConstantTexts[i];
      Block* block = static_cast<Block*>(::operator new(sizeof(Block) + text.size()));
      block->size = text.size();
      std::memcpy(block->data, text.data(), text.size());
      made[i] = block;
    }
    return made;
  }();
  return blocks;
}

const ShortText::Block* ShortText::Constant(std::string_view text) {
  for (std::size_t i = 0; i < kConstantTexts.size(); ++i) {
    if (text == kConstantTexts[i]) return Constants()[i];
  }
  return nullptr;
}

bool ShortText::IsConstant(const Block* block) {
  for (const Block* constant : Constants()) {
    if (constant == block) return true;
  }
  return false;
}

}  // namespace tenure::state
