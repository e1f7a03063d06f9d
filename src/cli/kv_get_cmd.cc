// tenure kv get: consul kv get (values, -detailed, -recurse, -keys).
#include "cli/client_support.h"
#include "cli/kv_pair.h"
#include "cli/kv_subcommands.h"

namespace tenure::cli {
namespace {

constexpr char kGetUsage[] =
    "Usage: tenure kv get [options] [KEY_OR_PREFIX]\n"
    "\n"
    "  Prints the raw value of KEY (\"Error! No key exists at: KEY\" and exit 1 when\n"
    "  absent). -detailed prints every field, with tenure's Fence (the lock\n"
    "  holder's fencing token) after Session while the key is locked. -recurse\n"
    "  prints KEY:VALUE for every key under the prefix, -keys only the key names.\n"
    "\n";

}  // namespace

int KvGetCommand(const Args& args) {
  bool recurse = false, keys = false, detailed = false, base64 = false, stale = false;
  std::string separator = "/";
  HttpFlags http;
  Flags flags("kv get");
  flags.Bool("recurse", &recurse, "print every key under the prefix as KEY:VALUE");
  flags.Bool("keys", &keys, "list key names under the prefix, not values");
  flags.String("separator", &separator,
               "with -keys, list names only up to the next separator (default \"/\")");
  flags.Bool("detailed", &detailed, "print all fields of the entry (and Fence while locked)");
  flags.Bool("base64", &base64, "print values base64-encoded");
  flags.Bool("stale", &stale, "allow any server to answer (stale read)");
  http.Register(&flags);
  if (auto exit_code = ParseFlags(&flags, args, kGetUsage, 1)) return *exit_code;

  const auto& positional = flags.positional();
  if (positional.size() > 1) {
    PrintErr("Too many arguments (expected 1, got " + std::to_string(positional.size()) + ")");
    return 1;
  }
  std::string key = positional.empty() ? "" : StripLeadingSlash(positional[0]);
  if (key.empty() && !(recurse || keys)) {
    PrintErr("Error! Missing KEY argument");
    return 1;
  }

  std::string target = KvPath(key);
  std::string query;
  if (keys) {
    query = "?keys=&separator=" + net::EscapeQueryValue(separator);
  } else if (recurse) {
    query = "?recurse=";
  }
  if (stale) query += query.empty() ? "?stale=" : "&stale=";
  auto client = http.MakeClient();
  auto response = client->Request("GET", target + query);
  if (!response.ok()) {
    PrintErr("Error querying Consul agent: " + std::string(response.status().message()));
    return 1;
  }
  const bool found = response->status == 200;
  if (!found && response->status != 404) {
    PrintErr("Error querying Consul agent: " + UnexpectedResponse(*response));
    return 1;
  }

  if (keys) {
    if (!found) return 0;
    auto list = ParseJson(response->body);
    if (!list || !list->is_array()) {
      PrintErr("Error querying Consul agent: unexpected key list from the server");
      return 1;
    }
    for (const auto& name : *list) {
      if (name.is_string()) PrintOut(name.get<std::string>());
    }
    return 0;
  }

  std::vector<KvPair> pairs;
  if (found) {
    auto parsed = ParseKvPairs(response->body);
    if (!parsed.ok()) {
      PrintErr("Error querying Consul agent: " + std::string(parsed.status().message()));
      return 1;
    }
    pairs = std::move(parsed).value();
  }
  if (recurse) {
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const KvPair& pair = pairs[i];
      if (detailed) {
        PrintOut(DetailedKvPair(pair, base64));
        if (i + 1 < pairs.size()) PrintOut("");
      } else {
        PrintOut(pair.key + ":" + (base64 ? pair.value_base64.value_or("") : pair.Value()));
      }
    }
    return 0;
  }
  if (pairs.empty()) {
    PrintErr("Error! No key exists at: " + key);
    return 1;
  }
  if (detailed) {
    PrintOut(DetailedKvPair(pairs[0], base64));
  } else {
    PrintOut(base64 ? pairs[0].value_base64.value_or("") : pairs[0].Value());
  }
  return 0;
}

}  // namespace tenure::cli
