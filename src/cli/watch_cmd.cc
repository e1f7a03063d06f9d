// tenure watch -type=key|keyprefix: `consul watch` for KV (docs/consul-api.md
// 8.3). Probes /v1/status/leader, then long-polls GET /v1/kv/<k>?index=N.
// Without a handler command it prints the first result as indented JSON
// and exits; with one it runs the handler (via /bin/sh -c, the arguments
// joined by spaces, as Consul's -shell default) for the first result and
// every later change, the compact JSON on stdin and CONSUL_INDEX in the
// environment. A failing handler ends the watch with exit 1; SIGINT/SIGTERM
// end it with exit 0 (a running handler gets the signal and is waited for).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/kv_pair.h"
#include "cli/watch_handler.h"
#include "client/blocking_read.h"

namespace tenure::cli {
namespace {

constexpr char kWatchUsage[] =
    "Usage: tenure watch -type=key -key=KEY [options] [handler...]\n"
    "       tenure watch -type=keyprefix -prefix=PREFIX [options] [handler...]\n"
    "\n"
    "  Watches a key (or every key under a prefix) like `consul watch`. Without a\n"
    "  handler, prints the current entry as JSON (null when absent) and exits.\n"
    "  With one, runs it for the current entry and again on every change, with the\n"
    "  entry as JSON on stdin and CONSUL_INDEX set; a failing handler ends the watch\n"
    "  with exit 1, SIGINT/SIGTERM with exit 0.\n"
    "\n";

constexpr int kBackoffSecondsMax = 5;

struct WatchSpec {
  std::string path;  // /v1/kv/<escaped key or prefix>
  bool prefix = false;
  bool stale = false;
};

struct Snapshot {
  std::uint64_t index = 0;
  nlohmann::ordered_json data;  // an entry, an array of entries, or null
};

Result<Snapshot> Fetch(net::BlockingHttpClient& client, const WatchSpec& spec,
                       std::uint64_t index) {
  std::string query;
  auto add = [&query](std::string_view param) {
    query += query.empty() ? '?' : '&';
    query += param;
  };
  if (spec.prefix) add("recurse=");
  if (spec.stale) add("stale=");
  client::BlockingGet read = client::BlockingRead(spec.path + query, index, 0);
  auto response = client.Request("GET", read.target, "", read.timeout_ms);
  if (!response.ok()) return response.status();
  if (response->status != 200 && response->status != 404) {
    return Status::Unavailable(UnexpectedResponse(*response));
  }
  Snapshot snapshot;
  auto returned = client::ParseIndexHeader(response->Header(client::kIndexHeader));
  if (!returned.ok()) return returned.status();
  snapshot.index = *returned;
  snapshot.data = nullptr;
  if (response->status == 200) {
    auto pairs = ParseKvPairs(response->body);
    if (!pairs.ok()) return pairs.status();
    if (spec.prefix) {
      snapshot.data = nlohmann::ordered_json::array();
      for (const KvPair& pair : *pairs) snapshot.data.push_back(KvPairToJson(pair));
    } else if (!pairs->empty()) {
      snapshot.data = KvPairToJson(pairs->front());
    }
  }
  return snapshot;
}

}  // namespace

int WatchCommand(const Args& args) {
  std::string type, key, prefix;
  bool stale = false, shell = true;
  HttpFlags http;
  Flags flags("watch");
  flags.String("type", &type, "what to watch: key or keyprefix");
  flags.String("key", &key, "the key to watch (type key)");
  flags.String("prefix", &prefix, "the key prefix to watch (type keyprefix)");
  flags.Bool("stale", &stale, "allow any server to answer (stale reads)");
  flags.Bool("shell", &shell,
             "run the handler with /bin/sh -c, its arguments joined by spaces (default true); "
             "-shell=false executes it directly");
  http.Register(&flags);
  if (auto exit_code = ParseFlags(&flags, args, kWatchUsage, 1)) return *exit_code;

  WatchSpec spec;
  spec.stale = stale;
  if (type.empty()) {
    PrintErr("Watch type must be specified");
    PrintErr("");
    PrintErr(UsageWithOptions(kWatchUsage, flags));
    return 1;
  }
  if (type == "key") {
    if (key.empty()) {
      PrintErr("Must specify a single key to watch");
      return 1;
    }
    spec.path = "/v1/kv/" + net::EscapeKeyPath(StripLeadingSlash(key));
  } else if (type == "keyprefix") {
    if (prefix.empty()) {
      PrintErr("Must specify a single prefix to watch");
      return 1;
    }
    spec.path = "/v1/kv/" + net::EscapeKeyPath(StripLeadingSlash(prefix));
    spec.prefix = true;
  } else {
    PrintErr("Unsupported watch type: " + type);
    return 1;
  }
  const std::vector<std::string>& command = flags.positional();

  auto client = http.MakeClient();
  auto leader = client->Request("GET", "/v1/status/leader");
  if (!leader.ok() || leader->status != 200) {
    PrintErr("Error querying Consul agent: " +
             (leader.ok() ? UnexpectedResponse(*leader) : std::string(leader.status().message())));
    return 1;
  }
  InstallStopSignalHandlers();

  // Consul's plan loop: deliver the first result; later ones only when the
  // index moved and the data differs. The next index is the rule of
  // client/blocking_read.h: one that went backwards (a restarted or replaced
  // server) resets the long poll to 0, and 0 or none waits on 1.
  bool delivered = false;
  std::uint64_t wait_index = 0;
  std::string last_result;
  int failures = 0;
  while (!StopRequested()) {
    auto snapshot = Fetch(*client, spec, wait_index);
    if (StopRequested()) break;
    if (!snapshot.ok()) {
      ++failures;
      int backoff_s = std::min(failures, kBackoffSecondsMax);
      PrintErr("Watch errored: " + std::string(snapshot.status().message()) + " (retry in " +
               std::to_string(backoff_s) + "s)");
      std::this_thread::sleep_for(std::chrono::seconds(backoff_s));
      continue;
    }
    failures = 0;
    if (delivered && snapshot->index == wait_index) continue;
    wait_index = client::NextWaitIndex(snapshot->index, wait_index);
    std::string result = GoJson(snapshot->data, 0);
    if (delivered && result == last_result) continue;
    delivered = true;
    last_result = result;

    if (command.empty()) {
      PrintOut(GoJson(snapshot->data, 4));
      return 0;
    }
    std::string failure = RunHandler(command, shell, snapshot->index, result + "\n");
    if (StopRequested()) break;
    if (!failure.empty()) {
      PrintErr("Error executing handler: " + failure);
      return 1;
    }
  }
  return 0;
}

}  // namespace tenure::cli
