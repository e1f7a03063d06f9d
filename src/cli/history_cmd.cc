// tenure history NAME | -key KEY | -etcd NAME: the lock history of an
// election's key (service/NAME/leader) or of any lock key, or the leaders of
// an etcd election or lock, from GET /v1/tenure/history/ (docs/history.md).
// Read-only.
#include <cstdint>
#include <cstdio>
#include <string>

#include "cli/client_support.h"
#include "cli/commands.h"

namespace tenure::cli {
namespace {

constexpr char kHistoryUsage[] =
    "Usage: tenure history NAME [options]\n"
    "       tenure history -key KEY [options]\n"
    "       tenure history -etcd NAME [options]\n"
    "\n"
    "  Prints the recorded grants of election NAME's lock (service/NAME/leader), or\n"
    "  of the lock key KEY, oldest first: fencing token, holder node and session\n"
    "  name, when granted, how long held, and how it ended. The server keeps the\n"
    "  last 32 grants per key (docs/history.md). -etcd NAME prints the leaders of\n"
    "  the etcd election or lock NAME (etcdctl elect/lock NAME, the Go concurrency\n"
    "  package), with each one's key: from when it led to how its key ended.\n"
    "  -json prints the server's JSON.\n"
    "\n";

// "1.5s", "2m3s", "1h2m": how long a grant was (or has been) held.
std::string HeldFor(std::int64_t ms) {
  if (ms < 0) ms = 0;
  char buf[64];
  if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm%llds", static_cast<long long>(ms / 60'000),
                  static_cast<long long>(ms % 60'000 / 1000));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%lldm", static_cast<long long>(ms / 3'600'000),
                  static_cast<long long>(ms % 3'600'000 / 60'000));
  }
  return buf;
}

// Milliseconds since the epoch of "YYYY-MM-DDTHH:MM:SS.mmmZ" (the server's
// form), or -1.
std::int64_t ParseTimeMs(const std::string& text) {
  int y, mo, d, h, mi, s, ms;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &y, &mo, &d, &h, &mi, &s, &ms) !=
      7) {
    return -1;
  }
  // Days from civil (Howard Hinnant's algorithm).
  y -= mo <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = era * 146097 + doe - 719468;
  return ((days * 24 + h) * 60 + mi) * 60'000 + s * 1000 + ms;
}

}  // namespace

int HistoryCommand(const Args& args) {
  bool as_json = false;
  std::string key;
  HttpFlags http;
  Flags flags("history");
  flags.Bool("json", &as_json, "print the server's JSON array");
  flags.String("key", &key, "a lock key instead of an election NAME");
  std::string etcd;
  flags.String("etcd", &etcd, "an etcd election or lock NAME: the leaders of its keys NAME/...");
  http.Register(&flags);
  flags.set_interspersed(true);
  if (auto code = ParseFlags(&flags, args, kHistoryUsage, 2)) return *code;
  const auto& positional = flags.positional();
  std::string what;
  std::string query;
  if (!etcd.empty()) {
    if (!positional.empty() || !key.empty()) {
      PrintErr("tenure history: give one of an election NAME, -key KEY or -etcd NAME");
      return 2;
    }
    // etcd's names are its keys' prefix as given: no leading '/' is dropped.
    key = etcd;
    query = "?succession";
    what = "etcd election \"" + etcd + "\" (keys " + etcd + "/...)";
  } else if (!key.empty()) {
    if (!positional.empty()) {
      PrintErr("tenure history: give an election NAME or -key KEY, not both");
      return 2;
    }
    key = StripLeadingSlash(key);
    what = "key \"" + key + "\"";
  } else {
    if (positional.size() != 1 || positional[0].empty() ||
        positional[0].find('/') != std::string::npos) {
      PrintErr("tenure history: expected one election NAME (no '/') or -key KEY");
      return 2;
    }
    key = "service/" + positional[0] + "/leader";
    what = "election \"" + positional[0] + "\" (key " + key + ")";
  }
  auto client = http.MakeClient();
  auto response =
      client->Request("GET", "/v1/tenure/history/" + net::EscapeKeyPath(key) + query, "", 10'000);
  if (!response.ok()) {
    PrintErr("Error querying the history: " + std::string(response.status().message()));
    return 1;
  }
  if (response->status == 404) {
    PrintErr("tenure history: no history for " + what +
             (query.empty() ? ": its lock was never held (or its history was bounded out)"
                            : ": nobody led it (or its keys' history was bounded out)"));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error querying the history: " + UnexpectedResponse(*response));
    return 1;
  }
  nlohmann::json grants = nlohmann::json::parse(response->body, nullptr, false);
  if (grants.is_discarded() || !grants.is_array()) {
    PrintErr("Error querying the history: the server's answer is not a JSON array");
    return 1;
  }
  if (as_json) {
    PrintOut(response->body);
    return 0;
  }
  const bool keyed = !query.empty();
  PrintOut(keyed ? "FENCE\tKEY\tNODE\tSESSION NAME\tLED FROM\tLED FOR\tENDED"
                 : "FENCE\tNODE\tSESSION NAME\tGRANTED\tHELD FOR\tENDED");
  for (const auto& g : grants) {
    const std::string granted = g.value("GrantedAt", "");
    const bool held = g.contains("EndedAt") && g["EndedAt"].is_null();
    std::string held_for = "-";
    const std::int64_t from = ParseTimeMs(granted);
    if (!held && from >= 0) {
      const std::int64_t to = ParseTimeMs(g["EndedAt"].get<std::string>());
      if (to >= 0) held_for = HeldFor(to - from);
    }
    std::string name = g.value("SessionName", "");
    if (name.empty()) name = g.value("Session", "");
    PrintOut(std::to_string(g.value("Fence", std::uint64_t{0})) + "\t" +
             (keyed ? g.value("Key", "") + "\t" : std::string()) + g.value("Node", "") + "\t" +
             name + "\t" + granted + "\t" + held_for + "\t" +
             (held ? std::string("(held)") : g.value("EndCause", "")));
  }
  return 0;
}

}  // namespace tenure::cli
