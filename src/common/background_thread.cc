#include "common/background_thread.h"

#include <sys/resource.h>
#include <unistd.h>

namespace tenure {

void LowerThisThreadPriority() {
  // On Linux a thread id names one thread for setpriority.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
}

}  // namespace tenure
