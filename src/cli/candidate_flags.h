// The options every candidate command shares (tenure run, tenure elect):
// server addresses and token, TTL, lock-delay, candidate name and the leader
// key's value, turned into libtenure's options with their checks.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cli/client_support.h"
#include "cli/flags.h"
#include "client/election.h"
#include "client/session.h"
#include "net/http_client.h"

namespace tenure::cli {

struct CandidateSetup {
  net::HttpClientOptions http;
  client::SessionOptions session;
  ElectionOptions election;
  std::string value;  // the leader key's value (JSON)
};

struct CandidateFlags {
  HttpFlags http;  // -http-addr takes a comma-separated list of servers
  std::string ttl = "15s";
  std::string lock_delay = "5s";
  std::string candidate;     // default hostname-pid
  std::string value;         // default {"Candidate":"<candidate>"}
  std::string session_node;  // default: the server's node name
  bool fair = true;          // -fair: wait in the leader key's queue (ElectionOptions::fair_queue)

  void Register(Flags* flags);
  // Checks the values; on an error prints "<command>: ..." and returns false.
  bool Resolve(const std::string& command, const std::string& name, CandidateSetup* setup) const;
};

// Moves a leading election NAME (no '/', not a flag) out of args.
bool TakeElectionName(Args* args, std::string* name);
bool ValidElectionName(const std::string& name);
// After parsing: NAME taken before the flags, or the only positional
// argument. Prints "<command>: ..." with the usage and returns false when it
// is missing, invalid, or followed by other arguments.
bool FinishElectionName(const std::string& command, const Flags& flags, std::string_view usage,
                        std::string* name);

}  // namespace tenure::cli
