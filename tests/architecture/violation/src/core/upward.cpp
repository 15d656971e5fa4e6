#include "kqual/harness/session.hpp"  // upward: core may use nothing
