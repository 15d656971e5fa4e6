# A two-module tree where the lower module includes the upper one: the layering check must fail.
set(KQUAL_MODULES core harness)
set(KQUAL_DEPS_core "")
set(KQUAL_DEPS_harness core)
