// The Server's housekeeping timers, shared by the files that implement the
// Server (server.cc and server_*.cc). Private to the server layer.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/types.h"
#include "server/server.h"

namespace tenure::server {

struct Server::Timers {
  explicit Timers(boost::asio::io_context& io)
      : reap(io), checkpoint(io), duties(io), members(io), restart(io), token_expiry(io) {}
  boost::asio::steady_timer reap;
  boost::asio::steady_timer checkpoint;
  boost::asio::steady_timer duties;
  boost::asio::steady_timer members;
  boost::asio::steady_timer restart;
  boost::asio::steady_timer token_expiry;
  MonoMs duties_armed_for_ms = MonoMs(-1);  // deadline `duties` is set to, -1 = idle
};

}  // namespace tenure::server
