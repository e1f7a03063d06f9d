#include "cli/async_child.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "cli/child_exit_watch.h"
#include "cli/child_group.h"

namespace tenure::cli {

namespace asio = boost::asio;

struct AsyncChild::Impl {
  explicit Impl(asio::io_context& context) : limit(context), exit_watch(context) {}
  ~Impl() { exit_watch.Stop(); }

  void Watch() {
    exit_watch.Start(&*group, [this](int code) {
      limit.cancel();
      group.reset();
      auto callback = std::move(done);
      done = nullptr;
      if (callback) callback(code);
    });
  }

  asio::steady_timer limit;
  std::optional<ChildGroup> group;
  ChildExitWatch exit_watch;
  std::function<void(int)> done;
  std::shared_ptr<char> life = std::make_shared<char>(0);
};

AsyncChild::AsyncChild(asio::io_context& io) : impl_(std::make_unique<Impl>(io)) {}
AsyncChild::~AsyncChild() = default;

bool AsyncChild::running() const { return impl_->group.has_value(); }

Status AsyncChild::Start(const std::string& command, const std::vector<std::string>& env,
                         DurationMs limit_ms, std::function<void(int)> done) {
  auto group = ChildGroup::Start({"/bin/sh", "-c", command}, env);
  if (!group.ok()) return group.status();
  impl_->group.emplace(std::move(*group));
  impl_->done = std::move(done);
  impl_->Watch();
  if (limit_ms > 0) {
    impl_->limit.expires_after(std::chrono::milliseconds(limit_ms));
    impl_->limit.async_wait([impl = impl_.get(), life = std::weak_ptr<char>(impl_->life)](
                                const boost::system::error_code& ec) {
      // Killing the keeper makes status_fd readable: Watch reports 137.
      if (!ec && !life.expired() && impl->group) impl->group->Kill();
    });
  }
  return Status();
}

}  // namespace tenure::cli
