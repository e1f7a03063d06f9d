// tenure::Client: the public handle of an sdk::Core.
#include "tenure/client.h"

#include "sdk/core.h"

namespace tenure {

Client::Client(ClientOptions options) : core_(std::make_shared<sdk::Core>(options)) {}

Client::~Client() { core_->Close(); }

const std::vector<std::string>& Client::addresses() const { return core_->addresses(); }

const char* Version() { return TENURE_VERSION; }

}  // namespace tenure
