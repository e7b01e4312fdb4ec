// Include this instead of <boost/asio.hpp>: Boost 1.74's awaitable.hpp uses std::exchange without
// including <utility>, which fails under GCC 12 with -std=c++20 (shared/style.md §0).
#ifndef KVCS_COMMON_ASIO_H_
#define KVCS_COMMON_ASIO_H_

#include <utility>

#include <boost/asio.hpp>

#endif  // KVCS_COMMON_ASIO_H_
