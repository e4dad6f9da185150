/* test_pbt: Population Based Training. Placeholder replaced below. */
#include "tinytest.h"
TEST(placeholder)
{
    CHECK(1);
}
TT_MAIN
