// ShortText: a text field in 8 bytes, for the Store's session records
// (decision 0058): a session's name, node and TTL text.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tenure::state {

// An immutable string held in one machine word. Text of up to 7 bytes (a
// node called "node1", a TTL of "30000ms" or "15s") lives in the word
// itself; the names the etcd and ZooKeeper ports give every session they
// make ("etcd lease", "zookeeper") point at one shared copy; anything else
// is one heap block of its own. A std::string costs 32 bytes, so a session
// made through those ports holds 72 bytes less and no block for them.
//
// A value: copies are deep (or share the constant), == and <=> compare the
// bytes, and it reads as a std::string_view (view(), or implicitly), which
// points into the object for inline text: it lives as long as the text
// does and is not moved. Changes are whole assignments.
class ShortText {
 public:
  static constexpr std::size_t kInlineMax = 7;

  ShortText() noexcept = default;
  ShortText(std::string_view text) { Init(text); }                           // NOLINT: text is text
  ShortText(const std::string& text) : ShortText(std::string_view(text)) {}  // NOLINT
  ShortText(const char* text) : ShortText(std::string_view(text)) {}         // NOLINT
  ShortText(const ShortText& other) { Init(other.view()); }
  ShortText(ShortText&& other) noexcept : word_(other.word_) { other.word_ = 0; }
  ShortText& operator=(const ShortText& other) {
    if (this != &other) *this = ShortText(other);
    return *this;
  }
  ShortText& operator=(ShortText&& other) noexcept {
    if (this != &other) {
      Free();
      word_ = other.word_;
      other.word_ = 0;
    }
    return *this;
  }
  ~ShortText() { Free(); }

  std::string_view view() const {
    if (word_ == 0) return {};
    if ((word_ & kInlineTag) != 0) {
      const char* bytes = reinterpret_cast<const char*>(&word_);
      return {bytes + 1, static_cast<std::size_t>(static_cast<unsigned char>(bytes[0]) >> 1)};
    }
    const Block* block = reinterpret_cast<const Block*>(word_);
    return {block->data, block->size};
  }
  operator std::string_view() const { return view(); }  // NOLINT: reads as text
  std::string str() const { return std::string(view()); }
  bool empty() const { return word_ == 0; }
  std::size_t size() const { return view().size(); }
  const char* data() const { return view().data(); }
  void clear() { Free(); }

  friend bool operator==(const ShortText& a, const ShortText& b) { return a.view() == b.view(); }
  friend bool operator==(const ShortText& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const ShortText& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const ShortText& a, const char* b) { return a.view() == b; }
  friend std::strong_ordering operator<=>(const ShortText& a, const ShortText& b) {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const ShortText& a, std::string_view b) {
    return a.view() <=> b;
  }
  friend std::strong_ordering operator<=>(const ShortText& a, const std::string& b) {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const ShortText& a, const char* b) {
    return a.view() <=> std::string_view(b);
  }

 private:
  // The low bit marks inline text (a block is aligned, so its address has
  // it clear); the first byte then holds the size and the tag, and the
  // other seven the bytes. Little-endian machines only (x86-64, arm64).
  static constexpr std::uintptr_t kInlineTag = 1;
  struct Block {
    std::size_t size;
    char data[];  // NOLINT: the bytes follow the size in one block
  };
  // The shared copy of `text` when it is one of the names above, else null.
  static const Block* Constant(std::string_view text);
  static const std::array<const Block*, 2>& Constants();
  static bool IsConstant(const Block* block);

  void Init(std::string_view text) {
    if (text.empty()) return;
    if (text.size() <= kInlineMax) {
      char bytes[sizeof word_] = {};
      bytes[0] = static_cast<char>((text.size() << 1) | kInlineTag);
      std::memcpy(bytes + 1, text.data(), text.size());
      std::memcpy(&word_, bytes, sizeof word_);
      return;
    }
    if (const Block* shared = Constant(text)) {
      word_ = reinterpret_cast<std::uintptr_t>(shared);
      return;
    }
    Block* block = static_cast<Block*>(::operator new(sizeof(Block) + text.size()));
    block->size = text.size();
    std::memcpy(block->data, text.data(), text.size());
    word_ = reinterpret_cast<std::uintptr_t>(block);
  }
  void Free() {
    if (word_ != 0 && (word_ & kInlineTag) == 0) {
      const Block* block = reinterpret_cast<const Block*>(word_);
      if (!IsConstant(block)) ::operator delete(const_cast<Block*>(block));
    }
    word_ = 0;
  }

  // 0 (empty), inline text, a constant, or a block this text owns.
  std::uintptr_t word_ = 0;
};
static_assert(sizeof(ShortText) == 8);
static_assert(std::endian::native == std::endian::little);

}  // namespace tenure::state
