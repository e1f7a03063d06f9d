#include "cli/candidate_flags.h"

#include <unistd.h>

#include <cstdio>

#include "client/lease.h"
#include "client/settings.h"
#include "common/duration.h"
#include "common/strings.h"

namespace tenure::cli {

namespace {

std::string DefaultCandidate() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "localhost");
  }
  return std::string(host) + "-" + std::to_string(::getpid());
}

}  // namespace

bool ValidElectionName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name[0] != '-';
}

bool TakeElectionName(Args* args, std::string* name) {
  if (!args->empty() && ValidElectionName((*args)[0])) {
    *name = (*args)[0];
    args->erase(args->begin());
    return true;
  }
  return false;
}

bool FinishElectionName(const std::string& command, const Flags& flags, std::string_view usage,
                        std::string* name) {
  if (name->empty() && flags.positional().size() == 1) {
    *name = flags.positional()[0];
  } else if (!flags.positional().empty()) {
    PrintErr(command + ": unexpected arguments");
    return false;
  }
  if (!ValidElectionName(*name)) {
    PrintErr(command + ": expected an election NAME (no '/')\n\n" + UsageWithOptions(usage, flags));
    return false;
  }
  return true;
}

void CandidateFlags::Register(Flags* flags) {
  http.Register(flags);
  flags->String("ttl", &ttl, "session TTL (default 15s; the server's minimum is 10s)");
  flags->String("lock-delay", &lock_delay, "lock-delay of the session (default 5s)");
  flags->String("candidate", &candidate, "this candidate's name (default hostname-pid)");
  flags->String("value", &value, "the leader key's value, JSON (default {\"Candidate\":NAME})");
  flags->Bool("fair", &fair,
              "wait in the leader key's FIFO queue, so candidates lead in arrival order (default "
              "true; false, or a server without the queue: Consul's blocking reads)");
  flags->String("session-node", &session_node,
                "the Node of the candidate's session (default: the server's node name); with "
                "ACLs, its token then needs session:write on this node only (docs/acl.md)");
}

bool CandidateFlags::Resolve(const std::string& command, const std::string& name,
                             CandidateSetup* setup) const {
  auto ttl_ns = ParseGoDuration(ttl);
  if (!ttl_ns.ok() || *ttl_ns <= 0) {
    PrintErr(command + ": invalid -ttl " + ttl);
    return false;
  }
  auto lock_delay_ns = ParseGoDuration(lock_delay);
  if (!lock_delay_ns.ok() || *lock_delay_ns < 0) {
    PrintErr(command + ": invalid -lock-delay " + lock_delay);
    return false;
  }
  client::SessionOptions& session = setup->session;
  session.name = command + " " + name;
  session.ttl_ms = *ttl_ns / kNsPerMs;
  session.lock_delay_ms = *lock_delay_ns / kNsPerMs;
  session.behavior = "release";
  if (session_node.size() > 1024 || session_node.find_first_of("\r\n") != std::string::npos) {
    PrintErr(command + ": invalid -session-node");
    return false;
  }
  session.node = session_node;
  session.lease = client::LeaseOptions::ForTtl(session.ttl_ms);
  if (Status valid = client::ValidateLeaseOptions(session.lease); !valid.ok()) {
    PrintErr(command + ": invalid -ttl " + ttl + ": " + std::string(valid.message()));
    return false;
  }
  setup->election.name = name;
  setup->election.fair_queue = fair;
  setup->election.candidate = candidate.empty() ? DefaultCandidate() : candidate;
  if (setup->election.candidate.find('/') != std::string::npos) {
    PrintErr(command + ": -candidate must not contain '/'");
    return false;
  }
  if (value.empty()) {
    nlohmann::ordered_json description;
    description["Candidate"] = setup->election.candidate;
    setup->value = GoJson(description, 0);
  } else if (!ParseJson(value)) {
    PrintErr(command + ": -value must be valid JSON");
    return false;
  } else {
    setup->value = value;
  }
  setup->http.addresses = SplitNonEmpty(http.http_addr, ',');
  if (setup->http.addresses.empty()) {
    setup->http.addresses = SplitNonEmpty(client::ResolveHttpAddress(""), ',');
  }
  Status resolved = http.Resolve(&setup->http);
  // Bad addresses or TLS files stop the command now, not each request later.
  if (resolved.ok()) resolved = net::HttpClient::Check(setup->http);
  if (!resolved.ok()) {
    PrintErr(command + ": " + std::string(resolved.message()));
    return false;
  }
  return true;
}

}  // namespace tenure::cli
