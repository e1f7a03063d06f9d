// tenure leader NAME [-watch] and tenure leader-get NAME [KEY]: leader
// discovery and leader settings, read straight from the election's keys
// (docs/leadership.md): service/NAME/leader and service/NAME/settings/.
// Read-only, so they work against any server and need no session.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/kv_pair.h"
#include "client/blocking_read.h"
#include "client/queue.h"

namespace tenure::cli {
namespace {

constexpr char kLeaderUsage[] =
    "Usage: tenure leader NAME [options]\n"
    "\n"
    "  Prints who leads election NAME, read from service/NAME/leader: the leader's\n"
    "  description, session and fencing token, or \"no leader\". Then the line of\n"
    "  succession, when candidates wait in the leader key's fair queue: one line each,\n"
    "  next first, named by the candidates/<name> registration its session holds (the\n"
    "  session id when none). With -watch, prints the view again whenever it changes\n"
    "  (new leader, no leader, key deleted, a candidate joining or leaving the line),\n"
    "  until interrupted.\n"
    "\n";

constexpr char kLeaderGetUsage[] =
    "Usage: tenure leader-get NAME [KEY] [options]\n"
    "\n"
    "  Prints the leader settings of election NAME (service/NAME/settings/), read in\n"
    "  one request so a group written together is seen together. With KEY, prints\n"
    "  that setting's value (empty if unset).\n"
    "\n";

bool ValidName(std::string_view name) {
  return !name.empty() && name.find('/') == std::string_view::npos;
}

struct LeaderView {
  bool has_leader = false;
  std::string value, session;
  std::uint64_t fence = 0;
  std::vector<client::Successor> line;  // the queue, next first
  bool operator==(const LeaderView& other) const {
    if (has_leader != other.has_leader || value != other.value || session != other.session ||
        fence != other.fence || line.size() != other.line.size()) {
      return false;
    }
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i].session != other.line[i].session ||
          line[i].candidate != other.line[i].candidate) {
        return false;
      }
    }
    return true;
  }
};

// The line of succession of election `name`: the leader key's queue
// (GET /v1/tenure/queue/..., 404 on a server without it: empty) mapped to
// the registrations under candidates/ (key:read on both; without it the
// line is empty, or shows session ids).
Result<std::vector<client::Successor>> ReadLine(net::BlockingHttpClient& client,
                                                const std::string& name) {
  const std::string leader_key = "service/" + name + "/leader";
  auto queued =
      client.Request("GET", "/v1/tenure/queue/" + net::EscapeKeyPath(leader_key), "", 10'000);
  if (!queued.ok()) return queued.status();
  // 404: a server without the queue (Consul). 403: a token that may read
  // the leader key only; the leader is still shown.
  if (queued->status == 404 || queued->status == 403) return std::vector<client::Successor>{};
  if (queued->status != 200) return Status::Unavailable(UnexpectedResponse(*queued));
  auto waiters = client::ParseQueue(queued->body);
  if (!waiters.ok()) return waiters.status();
  if (waiters->empty()) return std::vector<client::Successor>{};
  const std::string prefix = "service/" + name + "/candidates/";
  auto listed =
      client.Request("GET", "/v1/kv/" + net::EscapeKeyPath(prefix) + "?recurse", "", 10'000);
  if (!listed.ok()) return listed.status();
  std::vector<KvPair> candidates;
  if (listed->status == 200) {
    auto pairs = ParseKvPairs(listed->body);
    if (!pairs.ok()) return pairs.status();
    candidates = std::move(*pairs);
  } else if (listed->status != 404 && listed->status != 403) {  // 403: sessions, no names
    return Status::Unavailable(UnexpectedResponse(*listed));
  }
  return client::LineOfSuccession(*waiters, candidates, prefix);
}

Result<LeaderView> ParseLeader(const net::ClientResponse& response) {
  LeaderView view;
  if (response.status == 404) return view;
  if (response.status != 200) return Status::Unavailable(UnexpectedResponse(response));
  auto pairs = ParseKvPairs(response.body);
  if (!pairs.ok()) return pairs.status();
  if (pairs->empty() || (*pairs)[0].session.empty()) return view;
  view.has_leader = true;
  view.value = (*pairs)[0].Value();
  view.session = (*pairs)[0].session;
  view.fence = (*pairs)[0].fence.value_or(0);
  return view;
}

std::string Render(const LeaderView& view, const std::string& format) {
  if (format == "json") {
    nlohmann::ordered_json out;
    out["Leader"] = view.has_leader;
    if (view.has_leader) {
      out["Value"] = view.value;
      out["Session"] = view.session;
      out["Fence"] = view.fence;
    }
    nlohmann::ordered_json line = nlohmann::ordered_json::array();
    for (const client::Successor& next : view.line) {
      nlohmann::ordered_json row;
      row["Position"] = next.position;
      row["Candidate"] = next.candidate;
      row["Session"] = next.session;
      row["Since"] = next.since;
      line.push_back(std::move(row));
    }
    out["Queue"] = std::move(line);
    return GoJson(out, 0);
  }
  std::string out = !view.has_leader ? "no leader"
                                     : view.value + "\t(session " + view.session +
                                           ", fencing token " + std::to_string(view.fence) + ")";
  for (const client::Successor& next : view.line) {
    out += "\n  next " + std::to_string(next.position) + ": " +
           (next.candidate.empty() ? "session " + next.session
                                   : next.candidate + "\t(session " + next.session + ")");
  }
  return out;
}

// -watch follows two things, the leader key and its queue, each with its
// own blocking query on its own connection and thread. Either one seeing a
// new index (or an error) bumps the generation; the main thread then reads
// both afresh, so a change between a bump and the read is never missed: it
// bumps again.
class ChangeFeed {
 public:
  void Bump() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++generation_;
    }
    changed_.notify_one();
  }
  // Blocks until the generation is past `seen`; returns the new one.
  std::uint64_t WaitPast(std::uint64_t seen) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return generation_ > seen; });
    return generation_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
};

// One blocking query loop on `path` for the life of the process (detached:
// it owns its client and shares only the feed). A 404 without an index on
// the queue endpoint means a server without the queue (Consul): nothing to
// follow there.
void FollowIndex(std::unique_ptr<net::BlockingHttpClient> client, std::string path,
                 bool stop_on_404, std::shared_ptr<ChangeFeed> feed) {
  std::uint64_t index = 0;
  int failures = 0;
  for (;;) {
    client::BlockingGet read = client::BlockingRead(path, index, 0);
    auto response = client->Request("GET", read.target, "", read.timeout_ms);
    auto returned = response.ok() ? client::ParseIndexHeader(response->Header(client::kIndexHeader))
                                  : Result<std::uint64_t>(response.status());
    if (!returned.ok() || (response->status != 200 && response->status != 404)) {
      failures = failures < 5 ? failures + 1 : 5;
      std::this_thread::sleep_for(std::chrono::seconds(failures));  // back off, bounded
      feed->Bump();  // the main thread's reads meet the error and report it
      continue;
    }
    failures = 0;
    if (response->status == 404 && *returned == 0 && stop_on_404) return;
    if (*returned != index) feed->Bump();
    index = client::NextWaitIndex(*returned, index);  // client/blocking_read.h's rule
  }
}

std::string YamlScalar(const std::string& text) {
  // A JSON string is a valid YAML double-quoted scalar.
  return GoJson(nlohmann::ordered_json(text), 0);
}

}  // namespace

int LeaderCommand(const Args& args) {
  bool watch = false;
  std::string format = "text";
  HttpFlags http;
  Flags flags("leader");
  flags.Bool("watch", &watch, "follow changes until interrupted");
  flags.String("format", &format, "text (default) or json");
  http.Register(&flags);
  flags.set_interspersed(true);
  if (auto code = ParseFlags(&flags, args, kLeaderUsage, 2)) return *code;
  if (flags.positional().size() != 1 || !ValidName(flags.positional()[0])) {
    PrintErr("tenure leader: expected one election NAME (no '/')");
    return 2;
  }
  if (format != "text" && format != "json") {
    PrintErr("tenure leader: -format must be text or json");
    return 2;
  }
  auto client = http.MakeClient();
  const std::string leader_key = "service/" + flags.positional()[0] + "/leader";
  const std::string path = "/v1/kv/" + net::EscapeKeyPath(leader_key);
  auto feed = std::make_shared<ChangeFeed>();
  if (watch) {
    std::thread(FollowIndex, http.MakeClient(), path, false, feed).detach();
    std::thread(FollowIndex, http.MakeClient(),
                "/v1/tenure/queue/" + net::EscapeKeyPath(leader_key), true, feed)
        .detach();
  }
  std::uint64_t seen = 0;
  std::optional<LeaderView> last;
  int failures = 0;
  for (;;) {
    auto response = client->Request("GET", path, "", 10'000);
    Result<LeaderView> view =
        response.ok() ? ParseLeader(*response) : Result<LeaderView>(response.status());
    if (view.ok()) {
      auto line = ReadLine(*client, flags.positional()[0]);
      if (line.ok()) {
        view->line = std::move(*line);
      } else {
        view = line.status().Annotate("the line of succession");
      }
    }
    if (!view.ok()) {
      PrintErr("Error querying the leader: " + std::string(view.status().message()));
      if (!watch || ++failures > 5) return 1;
    } else {
      failures = 0;
      if (!last || !(*last == *view)) PrintOut(Render(*view, format));
      last = *view;
      if (!watch) return 0;
    }
    seen = feed->WaitPast(seen);
  }
}

int LeaderGetCommand(const Args& args) {
  std::string format = "text";
  HttpFlags http;
  Flags flags("leader-get");
  flags.String("format", &format, "text (default: KEY=VALUE lines), json or yaml");
  http.Register(&flags);
  flags.set_interspersed(true);
  if (auto code = ParseFlags(&flags, args, kLeaderGetUsage, 2)) return *code;
  const auto& positional = flags.positional();
  if (positional.empty() || positional.size() > 2 || !ValidName(positional[0])) {
    PrintErr("tenure leader-get: expected NAME [KEY] (NAME without '/')");
    return 2;
  }
  if (format != "text" && format != "json" && format != "yaml") {
    PrintErr("tenure leader-get: -format must be text, json or yaml");
    return 2;
  }
  const std::string prefix = "service/" + positional[0] + "/settings/";
  auto client = http.MakeClient();
  auto response = client->Request("GET", "/v1/kv/" + net::EscapeKeyPath(prefix) + "?recurse");
  if (!response.ok()) {
    PrintErr("Error reading leader settings: " + std::string(response.status().message()));
    return 1;
  }
  std::map<std::string, std::string> settings;
  if (response->status == 200) {
    auto pairs = ParseKvPairs(response->body);
    if (!pairs.ok()) {
      PrintErr("Error reading leader settings: " + std::string(pairs.status().message()));
      return 1;
    }
    for (const KvPair& pair : *pairs) settings[pair.key.substr(prefix.size())] = pair.Value();
  } else if (response->status != 404) {
    PrintErr("Error reading leader settings: " + UnexpectedResponse(*response));
    return 1;
  }
  if (positional.size() == 2) {
    auto it = settings.find(positional[1]);
    std::string value = it == settings.end() ? "" : it->second;
    if (format == "text")
      PrintOut(value);
    else
      PrintOut(GoJson(nlohmann::ordered_json(value), 0));  // JSON and YAML alike
    return 0;
  }
  if (format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [key, value] : settings) out[key] = value;
    PrintOut(GoJson(out, 0));
  } else if (format == "yaml") {
    if (settings.empty()) PrintOut("{}");
    for (const auto& [key, value] : settings) PrintOut(YamlScalar(key) + ": " + YamlScalar(value));
  } else {
    for (const auto& [key, value] : settings) PrintOut(key + "=" + value);
  }
  return 0;
}

}  // namespace tenure::cli
