// tenure kv put: consul kv put (plain, -cas, -acquire, -release), with
// Consul's exact messages; -fence adds tenure's fencing token on stderr.
#include "cli/client_support.h"
#include "cli/kv_subcommands.h"
#include "common/base64.h"

namespace tenure::cli {
namespace {

constexpr char kPutUsage[] =
    "Usage: tenure kv put [options] KEY [DATA]\n"
    "\n"
    "  Writes DATA to KEY. DATA is literal, @FILE for a file's contents, or - for\n"
    "  stdin; without DATA the value is empty. -acquire/-release take or give up\n"
    "  the lock on KEY for -session. -fence additionally prints the lock's fencing\n"
    "  token as \"Fencing token: N\" on stderr after a successful -acquire (stdout\n"
    "  stays exactly as Consul's).\n"
    "\n";

}  // namespace

int KvPutCommand(const Args& args) {
  bool cas = false, base64 = false, acquire = false, release = false, fence = false;
  std::uint64_t kv_flags = 0, modify_index = 0;
  std::string session;
  HttpFlags http;
  Flags flags("kv put");
  flags.Bool("cas", &cas,
             "check-and-set: write only if the key's ModifyIndex is -modify-index "
             "(0: only if the key does not exist)");
  flags.Uint64("flags", &kv_flags, "unsigned integer stored with the key (default 0)");
  flags.Bool("base64", &base64, "DATA is base64-encoded");
  flags.Uint64("modify-index", &modify_index, "the ModifyIndex for -cas");
  flags.String("session", &session, "session ID, required with -acquire and -release");
  flags.Bool("acquire", &acquire, "take the lock on KEY for -session (creates KEY if absent)");
  flags.Bool("release", &release, "give up the lock on KEY held by -session");
  flags.Bool("fence", &fence, "with -acquire: print \"Fencing token: N\" on stderr");
  http.Register(&flags);
  if (auto exit_code = ParseFlags(&flags, args, kPutUsage, 1)) return *exit_code;

  const auto& positional = flags.positional();
  if (positional.empty()) {
    PrintErr("Error! Missing KEY argument");
    return 1;
  }
  if (positional.size() > 2) {
    PrintErr("Error! Too many arguments (expected 1 or 2, got " +
             std::to_string(positional.size()) + ")");
    return 1;
  }
  std::string key = StripLeadingSlash(positional[0]);
  std::string data;
  if (positional.size() == 2) {
    auto loaded = LoadDataSource(positional[1]);
    if (!loaded.ok()) {
      PrintErr("Error! " + std::string(loaded.status().message()));
      return 1;
    }
    data = std::move(loaded).value();
  }
  if (base64) {
    auto decoded = Base64Decode(data);
    if (!decoded) {
      PrintErr("Error! Cannot base 64 decode data: illegal base64 data");
      return 1;
    }
    data = std::move(*decoded);
  }
  if ((acquire || release) && session.empty()) {
    PrintErr("Error! Missing -session (required with -acquire and -release)");
    return 1;
  }
  if (key.empty()) {  // Consul's api rejects it before sending too
    PrintErr("Error! Missing KEY argument");
    return 1;
  }

  // Consul's api.KV: a session given with a plain put or -cas is ignored;
  // -cas wins over -acquire, which wins over -release.
  std::string query;
  if (cas) {
    query = "?cas=" + std::to_string(modify_index);
  } else if (acquire) {
    query = "?acquire=" + net::EscapeQueryValue(session);
  } else if (release) {
    query = "?release=" + net::EscapeQueryValue(session);
  }
  if (kv_flags != 0) query += (query.empty() ? "?flags=" : "&flags=") + std::to_string(kv_flags);
  auto client = http.MakeClient();
  auto response = client->Request("PUT", KvPath(key) + query, data);
  std::string error;
  if (!response.ok()) {
    error = std::string(response.status().message());
  } else if (response->status != 200) {
    error = UnexpectedResponse(*response);
  }
  const bool written = error.empty() && response->body.find("true") != std::string::npos;

  if (cas) {
    if (!error.empty()) {
      PrintErr("Error! Did not write to " + key + ": " + error);
    } else if (!written) {
      PrintErr("Error! Did not write to " + key +
               (modify_index == 0 ? ": CAS performed with index=0 and key already exists."
                                  : ": CAS failed"));
    } else {
      PrintOut("Success! Data written to: " + key);
      return 0;
    }
    return 1;
  }
  if (acquire) {
    if (!error.empty()) {
      PrintErr("Error! Failed writing data: " + error);
      return 1;
    }
    if (!written) {
      PrintErr("Error! Did not acquire lock");
      return 1;
    }
    PrintOut("Success! Lock acquired on: " + key);
    if (fence && !response->Header("X-Tenure-Fence").empty()) {
      PrintErr("Fencing token: " + response->Header("X-Tenure-Fence"));
    }
    return 0;
  }
  if (release) {
    if (!error.empty()) {
      // Consul prints the key here, not the error; the error is worth more.
      PrintErr("Error! Failed writing data: " + key + ": " + error);
      return 1;
    }
    if (!written) {
      PrintErr("Error! Did not release lock");
      return 1;
    }
    PrintOut("Success! Lock released on: " + key);
    return 0;
  }
  if (!error.empty()) {
    PrintErr("Error! Failed writing data: " + error);
    return 1;
  }
  PrintOut("Success! Data written to: " + key);
  return 0;
}

}  // namespace tenure::cli
