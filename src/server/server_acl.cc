// Server: ACL resolution of callers, the bootstrap reset file, the initial
// management token and token expiry.
#include <fmt/core.h>
#include <sys/random.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/log.h"
#include "common/strings.h"
#include "server/server.h"
#include "server/server_timers.h"

namespace tenure::server {

Result<Caller> Server::ResolveCaller(std::string_view secret) {
  Result<Caller> caller = acl_resolver_.ResolveIgnoringExpiry(store_.acl(), secret);
  if (caller.ok() && AclResolver::MayExpire(*caller) &&
      AclResolver::Expired(*caller, clock_.NowUnixMs())) {
    return consul::AclNotFound();
  }
  return caller;
}

bool Server::CallerStillValid(const Caller& caller) const {
  return acl_resolver_.StillValid(store_.acl(), caller, clock_.NowUnixMs());
}

std::string Server::NewSecretUuid() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    TENURE_ASSERT(n > 0);  // getrandom cannot fail for 16 bytes once the pool is ready
    got += static_cast<std::size_t>(n);
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

namespace {
constexpr char kBootstrapResetFile[] = "acl-bootstrap-reset";
}

Result<LogIndex> Server::BootstrapResetIndex() const {
  if (options_.data_dir.empty()) return LogIndex();
  const std::string path = options_.data_dir + "/" + kBootstrapResetFile;
  std::ifstream in(path);
  if (!in) return LogIndex();
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  std::uint64_t index = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) index = index * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok) {
    return Status::InvalidArgument("ACL bootstrap reset file " + path +
                                   " does not hold a reset index (a number)");
  }
  return LogIndex(index);
}

void Server::ForgetBootstrapReset() const {
  if (options_.data_dir.empty()) return;
  std::remove((options_.data_dir + "/" + kBootstrapResetFile).c_str());
}

void Server::EnsureAclSetup() {
  const AclConfig& acl = acl_resolver_.config();
  if (!acl.enabled || !IsLeader() || !leader_ready_ || acl_setup_in_flight_) return;
  const state::AclTable& table = store_.acl();
  const bool initial_missing =
      !acl.initial_management.empty() && table.FindTokenBySecret(acl.initial_management) == nullptr;
  if (table.has_builtins() && !initial_missing) return;
  state::AclSetup setup;
  if (initial_missing) {
    state::AclToken token;
    do {
      token.accessor_id = NewSecretUuid();
    } while (table.FindToken(token.accessor_id) != nullptr);
    token.secret_id = acl.initial_management;
    token.description = "Initial Management Token";
    token.create_time = clock_.NowUnixMs();
    setup.initial_management = std::move(token);
  }
  acl_setup_in_flight_ = true;
  std::weak_ptr<bool> alive = alive_;
  Propose(std::move(setup), [this, alive](Result<state::ApplyResult>) {
    if (!alive.expired() && *alive.lock()) acl_setup_in_flight_ = false;
    // Whatever happened, the members timer looks again within a second.
  });
}

void Server::ScheduleTokenExpiry() {
  if (!acl_resolver_.config().enabled || !IsLeader() || !leader_ready_) return;
  std::optional<UnixMs> next = store_.acl().NextExpiration();
  if (!next) {
    housekeeping_->token_expiry.cancel();
    return;
  }
  // Wall-clock deadlines on a monotonic timer: look again at least once a
  // minute, so a clock step cannot postpone an expiry for long.
  DurationMs delay = std::clamp<DurationMs>(*next - clock_.NowUnixMs(), 0, 60'000);
  housekeeping_->token_expiry.expires_after(std::chrono::milliseconds(delay));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->token_expiry.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock() || stopping_) return;
    ExpireTokens();
  });
}

void Server::ExpireTokens() {
  if (!IsLeader() || !leader_ready_) return;
  for (const std::string& accessor : store_.acl().ExpiredAt(clock_.NowUnixMs())) {
    if (!tokens_expiring_.insert(accessor).second) continue;
    std::weak_ptr<bool> alive = alive_;
    Propose(state::AclTokenDelete{accessor, state::AclTokenDeleteReason::kExpired},
            [this, alive, accessor](Result<state::ApplyResult> result) {
              if (alive.expired() || !*alive.lock()) return;
              tokens_expiring_.erase(accessor);
              // A failed delete is tried again by the next pass.
              if (!result.ok()) ScheduleTokenExpiry();
            });
  }
  ScheduleTokenExpiry();
}

}  // namespace tenure::server
