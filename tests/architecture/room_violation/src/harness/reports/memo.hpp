#include "../timers/events.hpp"  // reports may use timers
#include "kqual/harness/session.hpp"  // and the top level
