// consumer ADDRESS ELECTION CANDIDATE: campaigns for service/ELECTION/leader
// with libtenure, prints its fencing token, holds the leadership until a line
// (or EOF) arrives on stdin, then resigns and destroys its session.
//
// Output, one line each: "libtenure VERSION", "session ID",
// "leader KEY fencing-token N", "resigned". Errors go to stderr, exit 1.
#include <tenure/tenure.h>

#include <iostream>
#include <string>

namespace {

int Fail(const char* what, const tenure::Status& status) {
  std::cerr << "consumer: " << what << ": " << status.ToString() << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: consumer ADDRESS ELECTION CANDIDATE" << std::endl;
    return 2;
  }
  std::cout << "libtenure " << tenure::Version() << std::endl;

  tenure::ClientOptions client_options;
  client_options.addresses = {argv[1]};
  tenure::Client client(client_options);

  tenure::SessionOptions session_options;
  session_options.name = "sdk consumer";
  session_options.ttl_ms = 10'000;
  session_options.lock_delay_ms = 1'000;
  tenure::Session session(client, session_options);
  if (tenure::Status status = session.Create(); !status.ok()) return Fail("session", status);
  std::cout << "session " << session.id() << std::endl;

  tenure::ElectionOptions election_options;
  election_options.name = argv[2];
  election_options.candidate = argv[3];
  tenure::Election election(session, election_options);
  election.OnLost([](const tenure::Status& why) {
    std::cerr << "consumer: leadership lost: " << why.ToString() << std::endl;
  });
  // Blocks while another candidate leads.
  const std::string value = std::string("{\"Candidate\":\"") + argv[3] + "\"}";
  if (tenure::Status status = election.Campaign(value); !status.ok()) {
    return Fail("campaign", status);
  }
  std::cout << "leader " << election.LeaderKey() << " fencing-token " << election.FencingToken()
            << std::endl;

  std::string line;
  std::getline(std::cin, line);
  if (tenure::Status status = election.Resign(); !status.ok()) return Fail("resign", status);
  if (tenure::Status status = session.Destroy(); !status.ok()) return Fail("destroy", status);
  std::cout << "resigned" << std::endl;
  return 0;
}
