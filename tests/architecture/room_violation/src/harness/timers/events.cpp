#include "kqual/harness/timers/events.hpp"
#include "../reports/memo.hpp"  // sideways: timers may use no other room
