// tenure kv delete: consul kv delete (single, -cas, -recurse).
#include "cli/client_support.h"
#include "cli/kv_subcommands.h"

namespace tenure::cli {
namespace {

constexpr char kDeleteUsage[] =
    "Usage: tenure kv delete [options] KEY_OR_PREFIX\n"
    "\n"
    "  Deletes KEY, or with -recurse every key under the prefix. Deleting a key\n"
    "  that does not exist succeeds.\n"
    "\n";

}  // namespace

int KvDeleteCommand(const Args& args) {
  bool cas = false, recurse = false;
  std::uint64_t modify_index = 0;
  HttpFlags http;
  Flags flags("kv delete");
  flags.Bool("cas", &cas, "delete only if the key's ModifyIndex is -modify-index");
  flags.Uint64("modify-index", &modify_index, "the ModifyIndex for -cas");
  flags.Bool("recurse", &recurse, "delete every key under the prefix");
  http.Register(&flags);
  if (auto exit_code = ParseFlags(&flags, args, kDeleteUsage, 1)) return *exit_code;

  const auto& positional = flags.positional();
  if (positional.size() > 1) {
    PrintErr("Too many arguments (expected 1, got " + std::to_string(positional.size()) + ")");
    return 1;
  }
  std::string key = positional.empty() ? "" : StripLeadingSlash(positional[0]);
  if (key.empty() && !recurse) {
    PrintErr("Error! Missing KEY argument");
    return 1;
  }
  if (cas && modify_index == 0) {
    PrintErr(
        "Cannot delete a key that does not exist. Provide a -modify-index greater than "
        "than 0.");
    return 1;
  }
  if (modify_index != 0 && !cas) {
    PrintErr("Cannot specify -modify-index without -cas!");
    return 1;
  }
  if (recurse && cas) {
    PrintErr("Cannot specify both -cas and -recurse!");
    return 1;
  }

  std::string query = recurse ? "?recurse=" : cas ? "?cas=" + std::to_string(modify_index) : "";
  auto client = http.MakeClient();
  auto response = client->Request("DELETE", KvPath(key) + query);
  std::string error;
  if (!response.ok()) {
    error = std::string(response.status().message());
  } else if (response->status != 200) {
    error = UnexpectedResponse(*response);
  }
  if (recurse) {
    if (!error.empty()) {
      PrintErr("Error! Did not delete prefix " + key + ": " + error);
      return 1;
    }
    PrintOut("Success! Deleted keys with prefix: " + key);
    return 0;
  }
  if (cas) {
    if (!error.empty()) {
      PrintErr("Error! Did not delete key " + key + ": " + error);
      return 1;
    }
    if (response->body.find("true") == std::string::npos) {
      PrintErr("Error! Did not delete key " + key + ": CAS failed");
      return 1;
    }
  } else if (!error.empty()) {
    PrintErr("Error deleting key " + key + ": " + error);
    return 1;
  }
  PrintOut("Success! Deleted key: " + key);
  return 0;
}

}  // namespace tenure::cli
