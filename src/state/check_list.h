// SessionChecks: a session's three check lists in one pointer, for the
// Store's session entries (decisions 0033 and 0067).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tenure::state {

struct ServiceCheck {
  std::string id;
  std::string ns;  // Consul "Namespace" (Enterprise); kept verbatim
  bool operator==(const ServiceCheck&) const = default;
};

// NodeChecks, ServiceChecks and the legacy Checks of a session in 8 bytes:
// no heap block when all three are empty (etcd leases, ZooKeeper sessions)
// or when they are what almost every Consul session has, NodeChecks
// {"serfHealth"} alone (all such sessions share one immutable copy); any
// other combination is one block of its own. A value: copies are deep (or
// share the immutable default), and == compares the lists, however stored.
// Changes go through the setters, which keep the rule above.
class SessionChecks {
 public:
  using Strings = std::vector<std::string>;
  using ServiceChecks = std::vector<ServiceCheck>;

  SessionChecks() = default;
  SessionChecks(const SessionChecks& other) : p_(other.owned() ? new Lists(*other.p_) : other.p_) {}
  SessionChecks(SessionChecks&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  SessionChecks& operator=(const SessionChecks& other) {
    if (this != &other) *this = SessionChecks(other);
    return *this;
  }
  SessionChecks& operator=(SessionChecks&& other) noexcept {
    if (this != &other) {
      Free();
      p_ = std::exchange(other.p_, nullptr);
    }
    return *this;
  }
  ~SessionChecks() { Free(); }

  const Strings& node() const { return lists().node; }
  const ServiceChecks& service() const { return lists().service; }
  const Strings& legacy() const { return lists().legacy; }

  void set_node(Strings items) {
    Change([&](Lists& l) { l.node = std::move(items); });
  }
  void set_service(ServiceChecks items) {
    Change([&](Lists& l) { l.service = std::move(items); });
  }
  void set_legacy(Strings items) {
    Change([&](Lists& l) { l.legacy = std::move(items); });
  }

  // True when no heap block is this value's own (for tests of the layout).
  bool shares_storage() const { return !owned(); }

  friend bool operator==(const SessionChecks& a, const SessionChecks& b) {
    return a.lists() == b.lists();
  }

 private:
  struct Lists {
    Strings node;
    ServiceChecks service;
    Strings legacy;
    bool operator==(const Lists&) const = default;
  };
  static const Lists& Empty() {
    static const Lists empty;
    return empty;
  }
  static const Lists& Default() {
    static const Lists serf_health{{"serfHealth"}, {}, {}};
    return serf_health;
  }
  const Lists& lists() const { return p_ != nullptr ? *p_ : Empty(); }
  bool owned() const { return p_ != nullptr && p_ != &Default(); }
  void Free() {
    if (owned()) delete p_;
    p_ = nullptr;
  }
  template <typename Edit>
  void Change(Edit edit) {
    Lists next = lists();
    edit(next);
    Free();
    if (next == Empty()) return;
    if (next == Default()) {
      p_ = &Default();
      return;
    }
    p_ = new Lists(std::move(next));
  }

  // nullptr (all empty), &Default(), or a block this value owns.
  const Lists* p_ = nullptr;
};

}  // namespace tenure::state
