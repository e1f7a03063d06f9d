#include "cli/child_exit_watch.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <optional>

#include "cli/child_group.h"

namespace tenure::cli {

namespace asio = boost::asio;

struct ChildExitWatch::Impl {
  explicit Impl(asio::io_context& context) : io(context) {}

  // The ChildGroup owns the descriptor: the stream_descriptor must let go.
  void Release() {
    if (status) {
      status->release();
      status.reset();
    }
  }

  void Wait() {
    status.emplace(io, group->status_fd());
    status->async_wait(
        asio::posix::stream_descriptor::wait_read,
        [this, life = std::weak_ptr<char>(life)](const boost::system::error_code& ec) {
          if (ec || life.expired()) return;
          Release();
          auto code = group->Reap();
          if (!code.ok()) {
            Wait();  // not finished yet (spurious wake-up)
            return;
          }
          group = nullptr;
          auto callback = std::move(done);
          done = nullptr;
          if (callback) callback(*code);
        });
  }

  asio::io_context& io;
  ChildGroup* group = nullptr;
  std::optional<asio::posix::stream_descriptor> status;
  std::function<void(int)> done;
  // Outstanding waits check it: a watch destroyed or restarted ignores them.
  std::shared_ptr<char> life = std::make_shared<char>(0);
};

ChildExitWatch::ChildExitWatch(asio::io_context& io) : impl_(std::make_unique<Impl>(io)) {}

ChildExitWatch::~ChildExitWatch() { Stop(); }

void ChildExitWatch::Start(ChildGroup* group, std::function<void(int)> done) {
  impl_->group = group;
  impl_->done = std::move(done);
  impl_->Wait();
}

void ChildExitWatch::Stop() {
  impl_->Release();  // cancels nothing: the life token below does
  impl_->life = std::make_shared<char>(0);
  impl_->group = nullptr;
  impl_->done = nullptr;
}

}  // namespace tenure::cli
