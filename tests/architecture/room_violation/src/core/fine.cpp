#include "kqual/core/error.hpp"
