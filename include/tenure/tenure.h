// libtenure, the client SDK of tenure: sessions, leader election and fencing
// tokens against a tenure cluster. Start with tenure/client.h (threading and
// lifetime rules), then tenure/session.h and tenure/election.h. Every header
// of include/tenure needs only the standard library (C++17 or later).
#pragma once

#include "tenure/client.h"    // IWYU pragma: export
#include "tenure/election.h"  // IWYU pragma: export
#include "tenure/options.h"   // IWYU pragma: export
#include "tenure/session.h"   // IWYU pragma: export
#include "tenure/status.h"    // IWYU pragma: export
