// The jitexpr command-line tool and REPL.
#include "cli.hpp"

int main(int argc, char** argv) { return jit::cli::main(argc, argv); }
