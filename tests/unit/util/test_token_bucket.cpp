// Unit tests for util/token_bucket: a burst, then one token a period, partial periods counted,
// and never more than the burst however long the bucket stood unused.
#include <doctest/doctest.h>

#include "util/token_bucket.h"

using space::TokenBucket;

TEST_CASE("TokenBucket: a burst, then one a period, capped at the burst") {
  TokenBucket b(2, 100);  // 2 at once, then 10 a second
  CHECK(b.take(1000));
  CHECK(b.take(1000));
  CHECK_FALSE(b.take(1000));
  CHECK_FALSE(b.take(1050));  // half a period: not yet
  CHECK(b.take(1100));        // the second half completes it
  CHECK_FALSE(b.take(1100));
  CHECK(b.take(100000));  // a long pause refills the burst only
  CHECK(b.take(100000));
  CHECK_FALSE(b.take(100000));
  CHECK_FALSE(b.take(50));  // a clock going back earns nothing
}
