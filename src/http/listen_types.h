// The listener's request and response values (listen/request.h) under the
// names the Consul API's code uses: http::HttpRequest is listen::HttpRequest.
#pragma once

#include "listen/request.h"

namespace tenure::http {

using listen::HttpRequest;
using listen::HttpResponse;
using listen::Responder;
using listen::SharedAnswer;

}  // namespace tenure::http
