// main() of the unit_tests binary: doctest's own, with its options (-tc, -sf, -s, --order-by ...).
// The test cases are in tests/unit/<layer>/test_<module>.cpp; this file is linked once.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
