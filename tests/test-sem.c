#include "common.h"
TEST(placeholder){}
static const struct CMUnitTest tests[] = { cmocka_unit_test(placeholder) };
NTSYNC_TEST_MAIN("sem", tests, true)
