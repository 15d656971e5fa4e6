// Thin main: parse, build the app, run it. Everything else lives in the library (src/run/).
#include "kqual/run/cli.hpp"

int main(int argc, char** argv) { return kqual::run::main(argc, argv); }
