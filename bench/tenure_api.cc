#include "tenure_api.h"

#include <fmt/format.h>

#include <charconv>
#include <utility>

namespace tenure::bench {

std::string ParseId(std::string_view body) {
  constexpr std::string_view kField = "\"ID\":\"";
  std::size_t start = body.find(kField);
  if (start == std::string_view::npos) return "";
  start += kField.size();
  std::size_t end = body.find('"', start);
  return end == std::string_view::npos ? "" : std::string(body.substr(start, end - start));
}

long StatFromAgentSelf(std::string_view body, std::string_view name) {
  std::string field = fmt::format("\"{}\":", name);
  std::size_t at = body.find(field);
  if (at == std::string_view::npos) return -1;
  at += field.size();
  if (at < body.size() && body[at] == '"') ++at;
  long value = -1;
  auto [end, ec] = std::from_chars(body.data() + at, body.data() + body.size(), value);
  (void)end;
  return ec == std::errc() ? value : -1;
}

SessionCreator::SessionCreator(Loop& loop, asio::ip::tcp::endpoint endpoint, int clients,
                               std::string body, std::vector<std::string>* ids)
    : ClosedLoop(loop, endpoint, clients), body_(std::move(body)), ids_(ids) {}

void SessionCreator::StartOp(Client& c) {
  c.conn->Send("PUT", "/v1/session/create", body_, [this, &c](const HttpResponse& r) {
    std::string id = r.status == 200 ? ParseId(r.body) : "";
    if (id.empty()) return FinishOp(c, Unexpected("session create", r));
    if (ids_) ids_->push_back(std::move(id));
    FinishOp(c, {});
  });
}

void Renewer::StartOp(Client& c) {
  const std::string& target = c.targets[c.next];
  c.next = (c.next + 1) % c.targets.size();
  c.conn->Send("PUT", target, {}, [this, &c](const HttpResponse& r) {
    // The renewed session, as a one-element list.
    bool ok = r.status == 200 && r.body.size() > 2 && r.body.front() == '[';
    FinishOp(c, ok ? "" : Unexpected("session renew", r));
  });
}

}  // namespace tenure::bench
