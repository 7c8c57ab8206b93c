// space: entry point. Everything, the single catch of errors included, is cli::main_entry
// (cli/entry.cpp).
#include "cli/entry.h"

int main(int argc, char** argv) {
  return space::cli::main_entry(argc, argv);
}
