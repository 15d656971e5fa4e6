# A module with two rooms where one room includes the other sideways: the layering check must fail.
set(KQUAL_MODULES core harness)
set(KQUAL_DEPS_core "")
set(KQUAL_DEPS_harness core)
set(KQUAL_ROOMS_harness timers reports)
set(KQUAL_ROOM_DEPS_harness_top timers)
set(KQUAL_ROOM_DEPS_harness_timers "")
set(KQUAL_ROOM_DEPS_harness_reports timers)
