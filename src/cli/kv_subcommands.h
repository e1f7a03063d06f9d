// The `tenure kv` subcommands, one file each (kv_get_cmd.cc, kv_put_cmd.cc,
// kv_delete_cmd.cc); kv_cmd.cc dispatches. They follow Consul's `consul kv`
// (docs/consul-api.md 8.2): results on stdout, errors on stderr, exit 0 on
// success and 1 on any failure, bad usage included, as Consul does.
#pragma once

#include <string>
#include <string_view>

#include "cli/commands.h"
#include "net/blocking_http_client.h"
#include "net/url.h"

namespace tenure::cli {

int KvGetCommand(const Args& args);
int KvPutCommand(const Args& args);
int KvDeleteCommand(const Args& args);

inline std::string KvPath(std::string_view key) { return "/v1/kv/" + net::EscapeKeyPath(key); }

}  // namespace tenure::cli
