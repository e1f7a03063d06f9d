// CheckList: a session's list of check ids (or service checks) in one
// pointer, for the Store's session entries (decision 0033).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenure::state {

// A list that costs 8 bytes and no heap block when it is empty or when it
// is the one list almost every session has, the default node checks
// {"serfHealth"} (all sessions share one immutable copy); any other list is
// a std::vector on the heap. A value: copies are deep (or share the
// immutable default), and == compares the elements, however stored.
// Read-only through its iterators; changes go through push_back, clear and
// assignment, which keep the rule above (a list that becomes the default
// drops its own copy).
template <typename T>
class CheckList {
 public:
  using value_type = T;
  using const_iterator = typename std::vector<T>::const_iterator;

  CheckList() = default;
  CheckList(std::initializer_list<T> items) : CheckList(std::vector<T>(items)) {}
  CheckList(std::vector<T> items) { Set(std::move(items)); }  // NOLINT: a list is a list
  CheckList(const CheckList& other)
      : p_(other.owned() ? new std::vector<T>(*other.p_) : other.p_) {}
  CheckList(CheckList&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  CheckList& operator=(const CheckList& other) {
    if (this != &other) *this = CheckList(other);
    return *this;
  }
  CheckList& operator=(CheckList&& other) noexcept {
    if (this != &other) {
      Free();
      p_ = std::exchange(other.p_, nullptr);
    }
    return *this;
  }
  ~CheckList() { Free(); }

  const std::vector<T>& items() const { return p_ != nullptr ? *p_ : Empty(); }
  const_iterator begin() const { return items().begin(); }
  const_iterator end() const { return items().end(); }
  std::size_t size() const { return items().size(); }
  bool empty() const { return p_ == nullptr; }
  const T& operator[](std::size_t i) const { return items()[i]; }

  // Copies the list (a list is immutable once stored): for a few items.
  // Build a long list in a std::vector and assign it once.
  void push_back(T item) {
    std::vector<T> next = items();
    next.push_back(std::move(item));
    Set(std::move(next));
  }
  void clear() { Free(); }

  friend bool operator==(const CheckList& a, const CheckList& b) { return a.items() == b.items(); }

 private:
  static const std::vector<T>& Empty() {
    static const std::vector<T> empty;
    return empty;
  }
  // The shared default, or nullptr for lists of other types.
  static const std::vector<T>* Shared() {
    if constexpr (std::is_same_v<T, std::string>) {
      static const std::vector<std::string> serf_health{"serfHealth"};
      return &serf_health;
    } else {
      return nullptr;
    }
  }
  bool owned() const { return p_ != nullptr && p_ != Shared(); }
  void Free() {
    if (owned()) delete p_;
    p_ = nullptr;
  }
  void Set(std::vector<T> items) {
    Free();
    if (items.empty()) return;
    const std::vector<T>* shared = Shared();
    if (shared != nullptr && items == *shared) {
      p_ = shared;
      return;
    }
    p_ = new std::vector<T>(std::move(items));
  }

  // nullptr (empty), Shared(), or a vector this list owns.
  const std::vector<T>* p_ = nullptr;
};

}  // namespace tenure::state
