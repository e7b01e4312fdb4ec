// RedisServer is header-only; this file gives the kvcs_index_test_tools target a source so that
// the header compiles on its own and the folder has an owner.
#include "index/test_tools/redis_server.h"
