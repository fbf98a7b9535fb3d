#include "cli/cli.h"

int main(int argc, char** argv) { return schedtwin::cli::main(argc, argv); }
