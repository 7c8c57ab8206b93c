// memhog: a static test program that allocates memory a MiB at a time, touching every page, until
// it has the MiB asked for or the system refuses (or kills it): what a guest program that wants
// more than the guest's RAM does. It prints how far it got every 16 MiB. tests/integration/
// 96_limits.sh runs it in a sandbox to show that the guest's own out-of-memory killer ends it and
// the host never kills the VMM for it. Usage: memhog MIB
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  long mib = argc > 1 ? std::atol(argv[1]) : 0;
  if (mib <= 0) {
    std::fprintf(stderr, "usage: memhog MIB\n");
    return 2;
  }
  for (long i = 0; i < mib; i++) {
    auto* p = static_cast<volatile char*>(std::malloc(1 << 20));
    if (!p) {
      std::printf("malloc refused at %ld MiB\n", i);
      return 3;
    }
    for (int j = 0; j < (1 << 20); j += 4096) p[j] = 1;
    if (i % 16 == 0) {
      std::printf("%ld MiB\n", i);
      std::fflush(stdout);
    }
  }
  std::printf("got %ld MiB\n", mib);
  return 0;
}
