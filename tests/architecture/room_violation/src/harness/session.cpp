#include "kqual/harness/timers/events.hpp"  // the top level may use the timers room
